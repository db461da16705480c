package storetest

import (
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// held is a step that must be allowed after being held for delay, leaving
// remaining, with the key back at full after reset and one more unit after
// refill; its reservation is the bucket's level after it (units) at the
// step's time, base+at.
func held(at time.Duration, cost, remaining int64, delay, reset, refill time.Duration, base time.Time, level int64) Step {
	return Step{At: at, Cost: cost, Want: limiter.Decision{Allowed: true, Remaining: remaining, Reset: reset,
		Refill: refill, Delay: delay, Reservation: limiter.Reservation{At: base.Add(at).UnixMicro(), Level: level}}}
}

// cancel is a step that gives back the reservation step of made, at
// base+at: ok is whether it must be given back.
func cancel(at time.Duration, of int, ok bool) Step {
	return Step{At: at, Cancel: true, Of: of, Want: limiter.Decision{Allowed: ok}}
}

// refilled returns s with its Want.Refill set: the delay tables work it
// out by hand.
func (s Step) refilled(refill time.Duration) Step {
	s.Want.Refill = refill
	return s
}

// delayTables hold requests for their turn (limiter.Limit.WithDelay): the
// same for token_bucket, gcra and leaky_bucket. A request that overflows
// the bucket by at most the delay's worth of units is allowed after Delay
// (the overflow / n, rounded up) and its cost counted at once; beyond, it
// is denied until it would fit within the delay. A cancel gives a held
// request's cost back only while it is the last reservation.
func delayTables() []Table {
	var all []Table
	for _, alg := range []limiter.Algorithm{limiter.TokenBucket, limiter.GCRA, limiter.LeakyBucket} {
		all = append(all, delayTablesOf(alg)...)
	}
	return all
}

// delayTablesOf returns delayTables for one algorithm.
func delayTablesOf(alg limiter.Algorithm) []Table {
	name := alg.String() + "/"
	bk := func(rate int64, period time.Duration, burst int64, delay time.Duration) limiter.Limit {
		l, err := must(alg, rate, period, burst).WithDelay(delay)
		if err != nil {
			panic(err)
		}
		return l
	}
	queue := bk(10, sec, 2, 300*ms)
	uneven := bk(3, sec, 0, sec)
	tables := []Table{
		// 10/s burst 2 delay 300ms: a request is 1e5 units, 1 drains each
		// µs; the capacity is 2e5, the queue 3e5 more.
		table(name+"delay_queue", queue, aligned,
			allow(0, 1, 1, 100*ms).refilled(100*ms),
			allow(0, 1, 0, 200*ms).refilled(100*ms),
			held(0, 1, 0, 100*ms, 300*ms, 200*ms, aligned, 3e5), // 1e5 over: its turn at 100ms
			held(0, 1, 0, 200*ms, 400*ms, 300*ms, aligned, 4e5),
			held(0, 1, 0, 300*ms, 500*ms, 400*ms, aligned, 5e5),
			deny(0, 1, 0, 100*ms, 500*ms).refilled(400*ms),           // 4e5 over, 1e5 beyond the queue
			allow(0, 0, 0, 500*ms).refilled(400*ms),                  // a look is not held
			cancel(0, 2, false),                                      // two reservations are behind it
			cancel(0, 4, true),                                       // the last: back to 4e5
			held(50*ms, 1, 0, 250*ms, 450*ms, 350*ms, aligned, 45e4), // 35e4 left: its turn at 300ms, as step 4's was
			cancel(100*ms, 9, true),
			cancel(100*ms, 9, false),                                 // once only
			never(100*ms, 3, 0, 300*ms).refilled(200*ms),             // 3e5 left: above the burst
			held(100*ms, 2, 0, 300*ms, 500*ms, 400*ms, aligned, 5e5), // 3e5 + 2e5 - 2e5 over: exactly the queue
			allow(2*sec, 0, 2, 0).refilled(0),
		),
		// 3/s delay 1s: a request is 1e6 units, 3 drain each µs; the
		// capacity is 3e6, the queue 3e6 more. The turns stay exact.
		table(name+"delay_uneven", uneven, aligned,
			allow(0, 3, 0, sec).refilled(333334*us),
			held(0, 1, 0, 333334*us, 1333334*us, 666667*us, aligned, 4e6), // ceil(1e6/3)
			held(0, 2, 0, sec, 2*sec, 1333334*us, aligned, 6e6),           // 3e6 over: the whole queue
			deny(0, 1, 0, 333334*us, 2*sec).refilled(1333334*us),          // ceil((4e6-3e6)/3)
			// 6e6 - 999,999 = 5,000,001: 3,000,001 over, 1 beyond the queue.
			deny(333333*us, 1, 0, us, 1666667*us).refilled(1000001*us),
			// 6e6 - 1,000,002 = 4,999,998: 2,999,998 over, ceil(/3) = 1e6µs;
			// its turn at 1,333,334µs, a third of a second after step 2's.
			held(333334*us, 1, 0, sec, 2*sec, 1333333*us, aligned, 5999998),
			cancel(333334*us, 2, false),
			cancel(333334*us, 5, true),
			allow(5*sec, 0, 3, 0).refilled(0),
		),
	}
	for i := range tables {
		tables[i].Refill = true
	}
	return tables
}
