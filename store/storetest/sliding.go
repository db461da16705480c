package storetest

import (
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// slidingWindowTables: at elapsed time e into an epoch-aligned window of
// period P, the estimate is floor(prev*(P-e)/P) + curr, prev and curr the
// counts of the previous and the current window; a request passes if the
// estimate plus its cost is at most N. Remaining is N less the estimate.
// Reset runs to the end of the next window while the current window holds
// a request, else to the end of the current one while the previous does.
func slidingWindowTables() []Table {
	sw := func(rate int64, period time.Duration) limiter.Limit {
		return must(limiter.SlidingWindow, rate, period, 0)
	}
	return []Table{
		table("sliding_window/fill_and_deny", sw(3, sec), aligned,
			allow(0, 1, 2, 2*sec),
			allow(100*ms, 1, 1, 1900*ms),
			allow(200*ms, 1, 0, 1800*ms),
			// No room left in this window; in the next, the weight
			// floor(3*(1s-e)/1s) is 2 from e = 1µs.
			deny(300*ms, 1, 0, 700*ms+us, 1700*ms),
			// e = 0: the weight is all 3; at e = 1µs, floor(2.999997) = 2.
			deny(sec, 1, 0, us, sec),
			allow(sec+us, 1, 0, 2*sec-us),
			// e = 500ms: floor(1.5) = 1, plus 1: one more fits.
			allow(1500*ms, 1, 0, 1500*ms),
			// The weight must fall to 3-2-1 = 0: 3*(1s-e) < 1s from
			// e = 666667µs.
			deny(1500*ms, 1, 0, 166667*us, 1500*ms),
			allow(1666667*us, 1, 0, 1333333*us), // floor(0.999999) = 0, plus 2
		),
		table("sliding_window/weighted_estimate", sw(10, minute), aligned,
			allow(30*sec, 10, 0, 90*sec),
			// The next window: the 10 weigh floor(10*(60s-e)/60s).
			allow(minute, 0, 0, minute),  // e = 0: 10
			allow(66*sec, 0, 1, 54*sec),  // e = 6s: 9
			allow(75*sec, 0, 3, 45*sec),  // e = 15s: floor(7.5) = 7
			allow(75*sec, 2, 1, 105*sec), // 7 + 2; Reset now runs to 3m
			// e = 20s: floor(6.67) + 2 = 8, no room for 3. The weight must
			// fall to 10-2-3 = 5: 10*(60s-e) < 360s from e = 24s+1µs.
			deny(80*sec, 3, 2, 4*sec+us, 100*sec),
			allow(84*sec+us, 3, 0, 96*sec-us), // floor(5.9999998) + 2 + 3 = 10
			allow(90*sec, 0, 0, 90*sec),       // e = 30s: 5 + 5
			allow(110*sec, 0, 4, 70*sec),      // e = 50s: floor(1.67) + 5 = 6
			allow(2*minute-us, 0, 5, minute+us),
			// The window after: the 5 weigh floor(5*(60s-e)/60s).
			allow(2*minute, 0, 5, minute),
			allow(150*sec, 0, 8, 30*sec), // e = 30s: floor(2.5) = 2
			allow(3*minute, 0, 10, 0),    // two windows on: nothing weighs
		),
		// N at the very end of a window, and N more within the next half
		// period: the floor lets the last one in once floor(2*(1s-e)/1s)
		// is 0, at e = 500001µs. 2N pass in [0.999999s, 1.500001s].
		table("sliding_window/2n_within_one_period", sw(2, sec), aligned,
			allow(sec-us, 2, 0, sec+us),
			deny(sec, 1, 0, us, sec), // e = 0: 2; at e = 1µs, floor(1.999998) = 1
			allow(sec+us, 1, 0, 2*sec-us),
			deny(sec+us, 1, 0, 500*ms, 2*sec-us),
			allow(1500*ms+us, 1, 0, 1500*ms-us),
		),
		table("sliding_window/cost", sw(10, sec), aligned,
			allow(0, 0, 10, 0),
			allow(0, 4, 6, 2*sec),
			never(10*ms, 11, 6, 1990*ms),
			// 4+7 > 10; in the next window the 4 weigh 3 from e = 1µs.
			deny(20*ms, 7, 6, 980*ms+us, 1980*ms),
			allow(20*ms, 6, 0, 1980*ms),
			allow(30*ms, 0, 0, 1970*ms),
		),
		// The 366-day window ends 42 days after the base (see fixed_window).
		table("sliding_window/1_per_366_days", sw(1, 366*day), aligned,
			allow(0, 1, 0, 408*day),
			never(sec, 2, 0, 408*day-sec),
			// The next window takes it from e = 1µs (floor((P-1µs)/P) = 0).
			deny(42*day-us, 1, 0, 2*us, 366*day+us),
			deny(42*day, 1, 0, us, 366*day),
			allow(42*day+us, 1, 0, 732*day-us),
		),
		// The base is 897µs into its millisecond.
		table("sliding_window/1_per_1ms", sw(1, ms), unaligned,
			allow(0, 1, 0, 1103*us),
			deny(102*us, 1, 0, 2*us, 1001*us),
			deny(103*us, 1, 0, us, ms),
			allow(104*us, 1, 0, 1999*us),
		),
		// The weight of 1e9 falls by 1000 a microsecond.
		table("sliding_window/1e9_per_1s", sw(1e9, sec), aligned,
			allow(0, 1e9, 0, 2*sec),
			allow(1250*ms, 250_000_000, 0, 1750*ms), // e = 250ms: 750,000,000
			deny(1250*ms, 1, 0, us, 1750*ms),
			allow(1250*ms+us, 1000, 0, 1750*ms-us), // 749,999,000
			never(1250*ms+us, 1e9+1, 0, 1750*ms-us),
		),
		table("sliding_window/1e9_per_1ms", sw(1e9, ms), aligned,
			allow(0, 1e9, 0, 2*ms),
			allow(ms+us, 1e6, 0, 1999*us), // e = 1µs: 999,000,000
			deny(ms+us, 1, 0, us, 1999*us),
		),
		table("sliding_window/7_per_s", sw(7, sec), aligned,
			allow(0, 7, 0, 2*sec),
			allow(1100*ms, 1, 0, 1900*ms), // e = 100ms: floor(6.3) = 6
			// The weight must fall to 7-1-1 = 5: 7*(1s-e) < 6s from
			// e = 142858µs (6/7 s = 857142.86µs).
			deny(1100*ms, 1, 0, 42858*us, 1900*ms),
			allow(1142858*us, 1, 0, 1857142*us), // floor(5.999994) + 1
		),
		table("sliding_window/idle_year", sw(2, hour), aligned,
			allow(0, 2, 0, 2*hour),
			deny(sec, 1, 0, hour-sec+us, 2*hour-sec),
			allow(year, 1, 1, 2*hour),
		),
		table("sliding_window/clock_backwards", sw(3, sec), aligned,
			allow(1500*ms, 2, 1, 1500*ms),
			// Back into [0, 1s): decided as at the start of the newer
			// window (e = 0).
			allow(500*ms, 1, 0, 2*sec),
			deny(700*ms, 1, 0, sec+us, 2*sec),
			allow(2*sec, 0, 0, sec),
		),
		// Back within one window the previous window weighs more again
		// (e = 100ms: floor(10*0.9) + 5 = 14), but the estimate is never
		// above N: a look passes, nothing more does.
		table("sliding_window/clock_backwards_within_a_window", sw(10, sec), aligned,
			allow(0, 10, 0, 2*sec),
			allow(1500*ms, 5, 0, 1500*ms), // floor(10*0.5) + 5
			allow(1100*ms, 0, 0, 1900*ms),
			// The weight must fall to 10-5-1 = 4: 10*(1s-e) < 5s from
			// e = 500001µs.
			deny(1100*ms, 1, 0, 400001*us, 1900*ms),
			allow(1500*ms+us, 1, 0, 1500*ms-us), // floor(4.99999) + 5 + 1
		),
	}
}
