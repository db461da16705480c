package storetest

import (
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// bucketTables are the same for token_bucket, gcra and leaky_bucket, which
// admit the same traffic: a bucket of B requests refilled continuously at N
// per P, counted in units where one request is p and one microsecond
// refills n (p/n = P/N reduced). RetryAfter is the missing units / n,
// rounded up; Reset the units to refill to full / n, rounded up; Remaining
// the whole requests left. Only a clock going backwards tells them apart.
func bucketTables(alg limiter.Algorithm) []Table {
	name := alg.String() + "/"
	bk := func(rate int64, period time.Duration, burst int64) limiter.Limit {
		return must(alg, rate, period, burst)
	}
	tables := []Table{
		// 3/s: a request is 1e6 units, 3 refill each µs.
		table(name+"fill_and_deny", bk(3, sec, 0), aligned,
			allow(0, 1, 2, 333334*us), // ceil(1e6/3)
			allow(0, 1, 1, 666667*us), // ceil(2e6/3)
			allow(0, 1, 0, sec),
			deny(0, 1, 0, 333334*us, sec),
			deny(333333*us, 1, 0, us, 666667*us), // 999,999 units; ceil(2,000,001/3)
			allow(333334*us, 1, 0, sec),          // 1,000,002 units: 2 left, ceil(2,999,998/3) = 1e6
			allow(2*sec, 0, 3, 0),
		),
		// 10/s burst 3: a request is 1e5 units, 1 refills each µs.
		table(name+"burst_below_rate", bk(10, sec, 3), aligned,
			allow(0, 3, 0, 300*ms),
			deny(0, 1, 0, 100*ms, 300*ms),
			deny(50*ms, 1, 0, 50*ms, 250*ms),
			allow(100*ms, 1, 0, 300*ms),
			never(100*ms, 4, 0, 300*ms), // above the burst, not the rate
			allow(350*ms, 2, 0, 250*ms), // 2.5 refilled
			allow(sec, 0, 3, 0),
			allow(sec, 3, 0, 300*ms),
		),
		table(name+"burst_above_rate", bk(1, sec, 5), aligned,
			allow(0, 5, 0, 5*sec),
			allow(sec, 1, 0, 5*sec),
			deny(1500*ms, 1, 0, 500*ms, 4500*ms),
			allow(10*sec, 0, 5, 0),
		),
		// 7/s: a request is 1e6 units, 7 refill each µs; no fraction of a
		// token is lost or invented.
		table(name+"7_per_s", bk(7, sec, 0), aligned,
			allow(0, 7, 0, sec),
			deny(0, 1, 0, 142858*us, sec),        // ceil(1e6/7)
			deny(142857*us, 1, 0, us, 857143*us), // 999,999 units; 6,000,001/7
			allow(142858*us, 1, 0, sec),          // 1,000,006: 6 left
			deny(285714*us, 1, 0, us, 857144*us), // 6+142856*7 = 999,998; ceil(6,000,002/7)
			allow(285715*us, 1, 0, sec),          // 1,000,005: 5 left
			allow(sec, 0, 5, 285715*us),          // 5+714285*7 = 5e6: 7 refilled, 2 taken; ceil(2e6/7)
		),
		// 3 per 10ms: a request is 10,000 units, 3 refill each µs.
		table(name+"3_per_10ms", bk(3, 10*ms, 0), unaligned,
			allow(0, 3, 0, 10*ms),
			deny(3333*us, 1, 0, us, 6667*us), // 9,999 units; ceil(20,001/3)
			allow(3334*us, 1, 0, 10*ms),      // 10,002: 2 left, ceil(29,998/3) = 10,000
			allow(10*ms, 0, 2, 3334*us),      // 2+6666*3 = 20,000; ceil(10,000/3)
			deny(10*ms, 3, 2, 3334*us, 3334*us),
			allow(13334*us, 3, 0, 10*ms), // 30,002: full
		),
		table(name+"1_per_366_days", bk(1, 366*day, 0), aligned,
			allow(0, 1, 0, 366*day),
			deny(sec, 1, 0, 366*day-sec, 366*day-sec),
			never(sec, 2, 0, 366*day-sec),
			deny(366*day-us, 1, 0, us, us),
			allow(366*day, 1, 0, 366*day),
		),
		table(name+"1_per_1ms", bk(1, ms, 0), unaligned,
			allow(0, 1, 0, ms),
			deny(999*us, 1, 0, us, us),
			allow(ms, 1, 0, ms),
		),
		// 1e9/s: a request is 1 unit, 1000 refill each µs.
		table(name+"1e9_per_1s", bk(1e9, sec, 0), aligned,
			allow(0, 1e9, 0, sec),
			allow(us, 1000, 0, sec),
			deny(us, 1, 0, us, sec),
			allow(500001*us, 0, 5e8, 500*ms),
			never(500001*us, 1e9+1, 5e8, 500*ms),
		),
		// 1e9/ms: a request is 1 unit, 1e6 refill each µs.
		table(name+"1e9_per_1ms_burst_1e6", bk(1e9, ms, 1e6), aligned,
			allow(0, 1e6, 0, us),
			deny(0, 1, 0, us, us),
			never(0, 1e6+1, 0, us),
			allow(us, 1e6, 0, us),
			allow(2*us, 0, 1e6, 0),
		),
		table(name+"1e9_per_1ms_burst_1e9", bk(1e9, ms, limiter.MaxBurst), aligned,
			allow(0, 1e9, 0, ms),
			allow(500*us, 0, 5e8, 500*us),
			allow(500*us, 5e8, 0, ms),
			deny(500*us, 1, 0, us, ms),
		),
		// The finest limit New accepts with burst 1e9: 1e9 x 9007199 + 1
		// <= 2^53. A request is 9,007,199 units, 1 refills each µs; a full
		// bucket is 9.007199e15 units, and gcra's TAT then lies beyond
		// 2^53µs: stores must count it exactly.
		table(name+"largest_exact_burst", bk(1, 9007199*us, limiter.MaxBurst), unaligned,
			allow(0, 1e9, 0, 9007199000000000*us),
			deny(sec, 1, 0, 8007199*us, 9007198999000000*us),
			allow(9007199*us, 1, 0, 9007199000000000*us),
			allow(9007200*us, 0, 0, 9007198999999999*us),
			never(9007200*us, 1e9+1, 0, 9007198999999999*us),
		),
		// 2/h: a request is 1.8e9 units (30 minutes), 1 refills each µs.
		table(name+"idle_year", bk(2, hour, 0), aligned,
			allow(0, 2, 0, hour),
			deny(sec, 1, 0, 1799*sec, 3599*sec),
			allow(year, 1, 1, 30*minute),
		),
		// 10/s: a request is 1e5 units, 1 refills each µs.
		table(name+"cost", bk(10, sec, 0), aligned,
			allow(0, 0, 10, 0),
			allow(0, 4, 6, 400*ms),
			never(10*ms, 11, 6, 390*ms), // 6.1 left
			deny(20*ms, 7, 6, 80*ms, 380*ms),
			allow(20*ms, 0, 6, 380*ms),
			allow(100*ms, 7, 0, sec),
			allow(100*ms, 0, 0, sec),
		),
	}
	return append(tables, bucketClockBackwards(alg))
}

// bucketClockBackwards: 1/s burst 2, a request is 1e6 units, 1 refills
// each µs. token_bucket and leaky_bucket remember the last update and treat
// an earlier time as it: no refill. gcra remembers only the theoretical
// arrival time (TAT), so an earlier time sees the key fuller (at most full),
// never emptier. Both admit 3 in [10s, 11s] = B + N*1s/P.
func bucketClockBackwards(alg limiter.Algorithm) Table {
	l := must(alg, 1, sec, 2)
	name := alg.String() + "/clock_backwards"
	if alg == limiter.GCRA {
		return table(name, l, aligned,
			allow(10*sec, 1, 1, sec),             // TAT 11s
			allow(9500*ms, 0, 0, 1500*ms),        // 1.5 requests ahead
			deny(9500*ms, 1, 0, 500*ms, 1500*ms), // 2.5 > 2
			deny(9*sec, 1, 0, sec, 2*sec),        // 2 ahead: full
			deny(0, 1, 0, sec, 2*sec),            // 11 ahead: full, no more
			allow(10*sec, 1, 0, 2*sec),           // TAT 12s
			allow(11*sec, 1, 0, 2*sec),           // TAT 13s
		)
	}
	return table(name, l, aligned,
		allow(10*sec, 1, 1, sec),
		allow(9500*ms, 0, 1, sec), // decided as at 10s
		allow(9500*ms, 1, 0, 2*sec),
		deny(9*sec, 1, 0, sec, 2*sec),
		deny(0, 1, 0, sec, 2*sec),
		deny(10*sec, 1, 0, sec, 2*sec),
		allow(11*sec, 1, 0, 2*sec),
	)
}
