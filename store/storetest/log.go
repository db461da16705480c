package storetest

import (
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// slidingLogTables: a request admitted at a counts while now < a+P; at most
// N count at any time. RetryAfter runs until enough of the oldest entries
// expire, Reset until the newest does.
func slidingLogTables() []Table {
	sl := func(rate int64, period time.Duration) limiter.Limit {
		return must(limiter.SlidingLog, rate, period, 0)
	}
	return []Table{
		table("sliding_log/fill_and_deny", sl(3, sec), aligned,
			allow(0, 1, 2, sec),
			allow(100*ms, 1, 1, sec),
			allow(200*ms, 1, 0, sec),
			deny(300*ms, 1, 0, 700*ms, 900*ms), // the entry at 0 expires at 1s
			deny(sec-us, 1, 0, us, 200*ms+us),
			allow(sec, 1, 0, sec),
			deny(sec, 2, 0, 200*ms, sec), // two must expire: 100ms and 200ms
			allow(1200*ms, 2, 0, sec),
		),
		table("sliding_log/cost", sl(10, minute), aligned,
			allow(0, 0, 10, 0),
			allow(0, 4, 6, minute),
			never(sec, 11, 6, 59*sec),
			deny(2*sec, 7, 6, 58*sec, 58*sec), // the 4 at 0 must expire
			allow(2*sec, 0, 6, 58*sec),        // a look adds no entry
			allow(3*sec, 6, 0, minute),
			allow(4*sec, 0, 0, 59*sec),
			deny(minute-us, 1, 0, us, 3*sec+us),
			allow(minute, 4, 0, minute),
			deny(minute, 1, 0, 3*sec, minute), // the 6 at 3s must expire
		),
		// Unlike fixed_window, a new epoch window frees nothing.
		table("sliding_log/exact_across_a_boundary", sl(5, minute), aligned,
			allow(59999*ms, 5, 0, minute),
			deny(minute, 1, 0, 59999*ms, 59999*ms),
			deny(119999*ms-us, 1, 0, us, us),
			allow(119999*ms, 5, 0, minute),
		),
		table("sliding_log/1_per_366_days", sl(1, 366*day), unaligned,
			allow(0, 1, 0, 366*day),
			never(0, 2, 0, 366*day),
			deny(366*day-us, 1, 0, us, us),
			allow(366*day, 1, 0, 366*day),
		),
		table("sliding_log/1_per_1ms", sl(1, ms), unaligned,
			allow(0, 1, 0, ms),
			deny(999*us, 1, 0, us, us),
			allow(ms, 1, 0, ms),
			allow(2*ms, 1, 0, ms),
		),
		table("sliding_log/10000_per_1ms", sl(limiter.MaxLogRate, ms), aligned,
			allow(0, 9999, 1, ms),
			allow(us, 1, 0, ms),
			deny(2*us, 1, 0, 998*us, 999*us), // the 9999 at 0 expire at 1ms
			never(2*us, 10001, 0, 999*us),
			allow(ms, 9999, 0, ms), // the 1 at 1µs still counts
			deny(ms, 1, 0, us, ms),
		),
		table("sliding_log/idle_year", sl(2, hour), aligned,
			allow(0, 2, 0, hour),
			deny(sec, 1, 0, hour-sec, hour-sec),
			allow(year, 1, 1, hour),
		),
		table("sliding_log/clock_backwards", sl(3, sec), aligned,
			allow(sec, 2, 1, sec),
			// Before the newest entry: decided as at it (1s), and added
			// to it.
			allow(500*ms, 1, 0, sec),
			deny(600*ms, 1, 0, sec, sec),
			deny(2*sec-us, 1, 0, us, us),
			allow(2*sec, 1, 2, sec),
		),
	}
}
