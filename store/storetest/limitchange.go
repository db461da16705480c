package storetest

import "github.com/sluice-rl/sluice/limiter"

// limitChangeTables change a key's limit between steps, as a reload or a
// client's new plan does: the key keeps what it has spent, read under the
// new limit (limiter.Reinterpret). A look (cost 0) is allowed even when
// the key has spent more than the new limit. A state is reinterpreted at the first
// decision under the new limit and kept so even when that request is
// denied; several tables have a later step that tells the two apart.
func limitChangeTables() []Table {
	tables := []Table{
		fixedWindowRateChanged(), fixedWindowPeriodChanged(),
		slidingWindowRateChanged(), slidingWindowPeriodChanged(), slidingWindowDeniedThenBack(),
		slidingLogLimitChanged(), algorithmChanged(),
	}
	for _, alg := range []limiter.Algorithm{limiter.TokenBucket, limiter.GCRA, limiter.LeakyBucket} {
		tables = append(tables, bucketTightened(alg), bucketUneven(alg))
	}
	return tables
}

// fixedWindowRateChanged: the count of the window is kept; above the new
// rate nothing remains.
func fixedWindowRateChanged() Table {
	fw := func(rate int64) limiter.Limit { return must(limiter.FixedWindow, rate, minute, 0) }
	return table("fixed_window/limit_changed", fw(10), aligned,
		allow(0, 6, 4, minute),
		deny(sec, 1, 0, 59*sec, 59*sec).under(fw(5)), // 6 counted of 5
		allow(sec, 0, 0, 59*sec).under(fw(5)),        // a look is never denied
		allow(2*sec, 2, 0, 58*sec).under(fw(8)),      // 8 of 8
		deny(3*sec, 1, 0, 57*sec, 57*sec).under(fw(8)),
		allow(3*sec, 2, 0, 57*sec).under(fw(10)),
		allow(minute, 1, 4, minute).under(fw(5)), // the next window
	)
}

// fixedWindowPeriodChanged: the count of the old window holding now moves
// to the new window holding now; once the old window has ended, nothing.
func fixedWindowPeriodChanged() Table {
	perMinute, perHour, per10s := must(limiter.FixedWindow, 5, minute, 0),
		must(limiter.FixedWindow, 5, hour, 0), must(limiter.FixedWindow, 5, 10*sec, 0)
	return table("fixed_window/limit_changed_period", perMinute, aligned,
		allow(30*sec, 5, 0, 30*sec),
		// [0, 1m) holds 40s: 5 counted in [0, 1h).
		deny(40*sec, 1, 0, hour-40*sec, hour-40*sec).under(perHour),
		// Kept by the denial: at 2m [0, 1h) still holds them (the 1m window
		// would have ended).
		deny(2*minute, 1, 0, 58*minute, 58*minute).under(perHour),
		// [0, 1h) holds 25m: 5 counted in [25m, 25m10s).
		deny(25*minute, 1, 0, 10*sec, 10*sec).under(per10s),
		allow(25*minute+10*sec, 4, 1, 10*sec).under(per10s),
		// [25m10s, 25m20s) has ended at 26m: nothing carried.
		allow(26*minute, 5, 0, minute).under(perMinute),
	)
}

// slidingWindowRateChanged: both counts are kept; the estimate is capped
// at the new rate.
func slidingWindowRateChanged() Table {
	sw := func(rate int64) limiter.Limit { return must(limiter.SlidingWindow, rate, minute, 0) }
	return table("sliding_window/limit_changed", sw(10), aligned,
		allow(0, 8, 2, 2*minute),
		// 8 counted of 4. It first fits in the next window once
		// floor(8*(60s-x)/60s) <= 3, at x = 30.000001s.
		deny(30*sec, 1, 0, 60*sec+us, 90*sec).under(sw(4)),
		// floor(8*29.999999/60) = 3, +1: 4 of 4.
		allow(90*sec+us, 1, 0, 90*sec-us).under(sw(4)),
		// 3 + 1 = 4 of 10.
		allow(90*sec+us, 0, 6, 90*sec-us).under(sw(10)),
	)
}

// slidingWindowPeriodChanged: the old estimate becomes the count of the
// new window holding now.
func slidingWindowPeriodChanged() Table {
	perMinute, per10s := must(limiter.SlidingWindow, 6, minute, 0), must(limiter.SlidingWindow, 6, 10*sec, 0)
	return table("sliding_window/limit_changed_period", perMinute, aligned,
		allow(50*sec, 6, 0, 70*sec),
		// 6 counted in [50s, 60s). floor(6*(10s-x)/10s) <= 5 from x = 1µs
		// of the next window; both counters empty at 70s.
		deny(55*sec, 1, 0, 5*sec+us, 15*sec).under(per10s),
		// [60s, 70s): floor(6*9.999999/10) = 5, +1.
		allow(60*sec+us, 1, 0, 20*sec-us).under(per10s),
		// floor(6*5/10) = 3 + 1 + 2. Had the denial not kept the new
		// state, the old one would count 6 here.
		allow(65*sec, 2, 0, 15*sec).under(per10s),
	)
}

// slidingWindowDeniedThenBack: a denial under a new limit keeps the
// state exactly as it was reinterpreted, not as the denial saw it from a
// later window: a clock that then goes back finds it as it was.
func slidingWindowDeniedThenBack() Table {
	sw := func(rate int64) limiter.Limit { return must(limiter.SlidingWindow, rate, minute, 0) }
	return table("sliding_window/limit_changed_denied_then_back", sw(10), aligned,
		allow(30*sec, 5, 5, 90*sec),
		// At 72s the previous window weighs floor(5*48/60) = 4: 3 of 3.
		// 1 fits once floor(5*(60s-x)/60s) <= 2, at x = 24.000001s.
		deny(72*sec, 1, 0, 12*sec+us, 48*sec).under(sw(3)),
		// Back in [0, 60s): 5 counted in the current window, all of it
		// until 120s.
		allow(50*sec, 0, 0, 70*sec).under(sw(3)),
	)
}

// slidingLogLimitChanged: the entries are kept and count for the new
// period from when they were made. Refill is worked out too: entries above
// the new rate must expire down to it before Remaining grows.
func slidingLogLimitChanged() Table {
	return refillTable("sliding_log/limit_changed", must(limiter.SlidingLog, 5, minute, 0),
		allow(0, 1, 4, minute).refill(minute),
		allow(5*sec, 1, 3, minute).refill(55*sec),
		allow(10*sec, 2, 1, minute).refill(50*sec),
		// 4 counted of 3: 2 must expire, the entries of 0s and 5s.
		deny(20*sec, 1, 0, 45*sec, 50*sec).refill(45*sec).under(must(limiter.SlidingLog, 3, minute, 0)),
		allow(20*sec, 0, 0, 50*sec).refill(45*sec).under(must(limiter.SlidingLog, 3, minute, 0)), // a look is never denied
		// Over 2 minutes they all still count, until 120s, 125s and 130s.
		deny(70*sec, 1, 0, 55*sec, 60*sec).refill(55*sec).under(must(limiter.SlidingLog, 3, 2*minute, 0)),
		// Over 30 seconds all have expired.
		allow(70*sec, 1, 4, 30*sec).refill(30*sec).under(must(limiter.SlidingLog, 5, 30*sec, 0)),
	)
}

// algorithmChanged: another algorithm's state says nothing: fresh.
func algorithmChanged() Table {
	fixed, gcra := must(limiter.FixedWindow, 3, minute, 0), must(limiter.GCRA, 3, minute, 0)
	return table("fixed_window/algorithm_changed", fixed, aligned,
		allow(0, 3, 0, minute),
		allow(sec, 1, 2, 20*sec).under(gcra), // a request is 20s
		allow(2*sec, 1, 2, 58*sec),
		allow(3*sec, 0, 3, 0).under(must(limiter.SlidingLog, 3, minute, 0)),
		allow(4*sec, 1, 2, 56*sec),
	)
}

// bucketTightened: 10/s, a request is 1e5 units; then 2/s burst 5, a
// request is 5e5 units, a full bucket 2.5e6, 1 unit drains each µs.
func bucketTightened(alg limiter.Algorithm) Table {
	tight := must(alg, 2, sec, 5)
	return table(alg.String()+"/limit_changed", must(alg, 10, sec, 0), aligned,
		allow(0, 10, 0, sec),
		// At 300ms 7 requests are in the bucket: more than 5, full.
		deny(300*ms, 1, 0, 500*ms, 2500*ms).under(tight),
		// Drained at 2/s since: 4 in the bucket, room for 1. (Had the
		// denial not kept the new state, 10/s would have drained it to 2.)
		allow(800*ms, 1, 0, 2500*ms).under(tight),
		deny(800*ms, 1, 0, 500*ms, 2500*ms).under(tight),
	)
}

// bucketUneven: 3/s, a request is 1e6 units, 3 drain each µs; then 10/7s,
// a request is 7e5 units, 1 drains each µs, a full bucket 7e6.
func bucketUneven(alg limiter.Algorithm) Table {
	perSecond, per7s := must(alg, 3, sec, 0), must(alg, 10, 7*sec, 0)
	return table(alg.String()+"/limit_changed_uneven", perSecond, aligned,
		allow(0, 3, 0, sec),
		// At 1µs 2,999,997 units (3 drained): 2 requests and 999,997
		// units, which are 999,997*7e5/1e6 = 699,997.9 units of 10/7s,
		// rounded up: 1,400,000 + 699,998 = 2,099,998 of 7e6.
		allow(us, 0, 7, 2099998*us).under(per7s),
		allow(us, 1, 6, 2799998*us).under(per7s),
		// Back to 3/s: 2,799,998/7e5 is 3.99 requests, more than 3: full.
		// 1e6 units missing at 3 each µs.
		deny(us, 1, 0, 333334*us, sec).under(perSecond),
	)
}
