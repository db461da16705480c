package storetest

import (
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// fixedWindowTables: at most N in each epoch-aligned window of one period.
// While a window holds any request, Reset is the time to its end.
func fixedWindowTables() []Table {
	fw := func(rate int64, period time.Duration) limiter.Limit {
		return must(limiter.FixedWindow, rate, period, 0)
	}
	return []Table{
		table("fixed_window/fill_and_deny", fw(3, sec), aligned,
			allow(0, 1, 2, sec), // window [0, 1s)
			allow(100*ms, 1, 1, 900*ms),
			allow(200*ms, 1, 0, 800*ms),
			deny(300*ms, 1, 0, 700*ms, 700*ms), // the next window starts at 1s
			deny(sec-us, 1, 0, us, us),
			allow(sec, 1, 2, sec),
		),
		table("fixed_window/2n_around_a_boundary", fw(5, minute), aligned,
			allow(59999*ms, 1, 4, ms),
			allow(59999*ms, 1, 3, ms),
			allow(59999*ms, 1, 2, ms),
			allow(59999*ms, 1, 1, ms),
			allow(59999*ms, 1, 0, ms),
			deny(59999500*us, 1, 0, 500*us, 500*us),
			// A new window: 5 more, 10 within one millisecond.
			allow(minute, 1, 4, minute),
			allow(minute, 1, 3, minute),
			allow(minute, 1, 2, minute),
			allow(minute, 1, 1, minute),
			allow(minute, 1, 0, minute),
			deny(minute+ms, 1, 0, minute-ms, minute-ms),
		),
		// The base is 535897µs into its second: the window ends 464103µs on.
		table("fixed_window/unaligned_base", fw(4, sec), unaligned,
			allow(0, 2, 2, 464103*us),
			deny(0, 3, 2, 464103*us, 464103*us),
			allow(0, 2, 0, 464103*us),
			deny(464102*us, 1, 0, us, us),
			allow(464103*us, 4, 0, sec),
		),
		table("fixed_window/cost", fw(10, sec), aligned,
			allow(0, 0, 10, 0), // a look at a new key counts nothing
			allow(0, 4, 6, sec),
			never(10*ms, 11, 6, 990*ms), // above the rate: nothing consumed
			allow(20*ms, 0, 6, 980*ms),
			deny(30*ms, 7, 6, 970*ms, 970*ms),
			allow(30*ms, 6, 0, 970*ms),
			allow(40*ms, 0, 0, 960*ms), // a look passes even when full
			allow(sec, 10, 0, sec),
		),
		// 2026-01-01 is 27993600s (324 days) into its 366-day window
		// (1767225600 mod 31622400), which ends 42 days later.
		table("fixed_window/1_per_366_days", fw(1, 366*day), aligned,
			allow(0, 1, 0, 42*day),
			deny(sec, 1, 0, 42*day-sec, 42*day-sec),
			never(sec, 2, 0, 42*day-sec),
			deny(42*day-us, 1, 0, us, us),
			allow(42*day, 1, 0, 366*day),
		),
		// The base is 897µs into its millisecond.
		table("fixed_window/1_per_1ms", fw(1, ms), unaligned,
			allow(0, 1, 0, 103*us),
			deny(0, 1, 0, 103*us, 103*us),
			deny(102*us, 1, 0, us, us),
			allow(103*us, 1, 0, ms),
			allow(1103*us, 1, 0, ms),
		),
		table("fixed_window/1e9_per_1s", fw(1e9, sec), aligned,
			allow(0, 1e9-1, 1, sec),
			deny(0, 2, 1, sec, sec),
			allow(us, 1, 0, sec-us),
			allow(sec, 1e9, 0, sec),
			never(sec, 1e9+1, 0, sec),
		),
		table("fixed_window/1e9_per_1ms", fw(1e9, ms), aligned,
			allow(0, 1e9, 0, ms),
			deny(999*us, 1, 0, us, us),
			allow(ms, 1e9, 0, ms),
		),
		// The base is 5897µs into its 10ms window: it ends 4103µs on.
		table("fixed_window/3_per_10ms", fw(3, 10*ms), unaligned,
			allow(0, 1, 2, 4103*us),
			allow(4102*us, 2, 0, us),
			deny(4102*us, 1, 0, us, us),
			allow(4103*us, 3, 0, 10*ms),
		),
		table("fixed_window/idle_year", fw(2, hour), aligned,
			allow(0, 2, 0, hour),
			deny(sec, 1, 0, hour-sec, hour-sec),
			allow(year, 1, 1, hour), // 2027-01-01 starts an hour too
		),
		table("fixed_window/clock_backwards", fw(3, sec), aligned,
			allow(1500*ms, 2, 1, 500*ms), // window [1s, 2s)
			// Back into [0, 1s): counted in the newer window, as at its
			// start (1s), so Reset and RetryAfter run to 2s from there.
			allow(500*ms, 1, 0, sec),
			deny(600*ms, 1, 0, sec, sec),
			deny(1900*ms, 1, 0, 100*ms, 100*ms),
			allow(2*sec, 1, 2, sec),
		),
	}
}
