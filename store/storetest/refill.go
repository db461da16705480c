package storetest

import (
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// refillTables pin Decision.Refill by hand: how long until Remaining grows
// by at least one unit (what RateLimit's t says), per algorithm. The other
// tables take Refill from limiter.Decide, so that every store is checked
// against the reference on every step.
func refillTables() []Table {
	tables := []Table{
		// All of a fixed window's units come back at once, at its end.
		refillTable("fixed_window/refill", must(limiter.FixedWindow, 3, minute, 0),
			allow(0, 1, 2, minute).refill(minute),
			allow(10*sec, 2, 0, 50*sec).refill(50*sec),
			deny(20*sec, 1, 0, 40*sec, 40*sec).refill(40*sec),
			allow(minute, 0, 3, 0).refill(0), // a new window: full
		),
		// 4/m: the previous window's share floor(prev·(P−e)/P) shrinks a
		// unit at a time; the current window's count starts to shrink the
		// moment it becomes the previous one.
		refillTable("sliding_window/refill", must(limiter.SlidingWindow, 4, minute, 0),
			// curr 2: at 60s it weighs floor(2·P/P) = 2, 1µs later 1.
			allow(0, 2, 2, 2*minute).refill(minute+us),
			allow(30*sec, 2, 0, 90*sec).refill(30*sec+us),
			deny(40*sec, 1, 0, 20*sec+us, 80*sec).refill(20*sec+us),
			// prev 4 at e = 10s: floor(4·50/60) = 3, 1 left; it is 2 once
			// 4·(60−e)/60 < 3, that is after e = 15s.
			allow(70*sec, 0, 1, 50*sec).refill(5*sec+us),
			allow(70*sec, 1, 0, 110*sec).refill(5*sec+us),
			deny(75*sec, 1, 0, us, 105*sec).refill(us),        // floor(4·45/60) = 3 + curr 1
			allow(75*sec+us, 1, 0, 105*sec-us).refill(15*sec), // 2 + 2: the next unit at e = 30s
		),
		// The oldest entry frees its cost first.
		refillTable("sliding_log/refill", must(limiter.SlidingLog, 3, minute, 0),
			allow(0, 1, 2, minute).refill(minute),
			allow(20*sec, 1, 1, minute).refill(40*sec),
			allow(30*sec, 1, 0, minute).refill(30*sec),
			deny(45*sec, 1, 0, 15*sec, 45*sec).refill(15*sec),
			allow(minute, 0, 1, 30*sec).refill(20*sec), // the entry of 0s has expired
			allow(100*sec, 0, 3, 0).refill(0),
		),
	}
	for _, alg := range []limiter.Algorithm{limiter.TokenBucket, limiter.GCRA, limiter.LeakyBucket} {
		tables = append(tables,
			// 2/s burst 4: a request is 500,000 units, 1 refills each µs.
			refillTable(alg.String()+"/refill", must(alg, 2, sec, 4),
				allow(0, 1, 3, 500*ms).refill(500*ms),
				allow(0, 3, 0, 2*sec).refill(500*ms),
				// 100,000 units at 100ms: one more request in 400ms, two in 900ms.
				deny(100*ms, 2, 0, 900*ms, 1900*ms).refill(400*ms),
				never(100*ms, 5, 0, 1900*ms).refill(400*ms),
				allow(700*ms, 1, 0, 1800*ms).refill(300*ms),  // 700,000 - 500,000 = 200,000
				allow(1250*ms, 0, 1, 1250*ms).refill(250*ms), // 750,000: 250,000 to 1,000,000
				allow(5*sec, 0, 4, 0).refill(0),
			),
			// 3/s: a request is 1e6 units, 3 refill each µs: ceil(1e6/3).
			refillTable(alg.String()+"/refill_3_per_s", must(alg, 3, sec, 0),
				allow(0, 1, 2, 333334*us).refill(333334*us),
				allow(0, 1, 1, 666667*us).refill(333334*us),
				allow(200*ms, 0, 1, 466667*us).refill(133334*us), // 1e6 + 6e5: 4e5 more, ceil(4e5/3)
			),
		)
	}
	return tables
}

// refillTable is table for steps whose Want.Refill is written out.
func refillTable(name string, l limiter.Limit, steps ...Step) Table {
	tb := table(name, l, aligned, steps...)
	tb.Refill = true
	return tb
}

// refill returns s wanting Decision.Refill d.
func (s Step) refill(d time.Duration) Step {
	s.Want.Refill = d
	return s
}
