package storetest

import (
	"math"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// edgeTables: times clamped to 1970..2112, times at the ends of int64, keys
// that differ only in their encoding, negative costs and the zero Limit.
func edgeTables() []Table {
	var all []Table
	for _, alg := range limiter.Algorithms {
		all = append(all, before1970(alg), after2112(alg), int64Extremes(alg),
			keysByEncoding(alg), extremeCosts(alg))
	}
	return append(all, table("zero_limit/denies_everything", limiter.Limit{}, aligned,
		never(0, 1, 0, 0),
		never(0, 0, 0, 0),
		never(0, -1, 0, 0),
		never(0, 1, 0, 0).on(store.NewKey("other")),
	))
}

// one is 1 request per period (burst 1 for the buckets).
func one(alg limiter.Algorithm, period time.Duration) limiter.Limit { return must(alg, 1, period, 0) }

// Every time before 1970 is taken as 1µs after the epoch, in the window
// [0, 1s). The base is 1938.
func before1970(alg limiter.Algorithm) Table {
	name, l, base := alg.String()+"/before_1970", one(alg, sec), time.Unix(-1e9, 0)
	at := func(s Step, usec int64) Step { return s.when(time.UnixMicro(usec)) }
	switch alg {
	case limiter.FixedWindow:
		return table(name, l, base,
			allow(0, 1, 0, sec-us),
			deny(0, 1, 0, sec-us, sec-us).when(time.Time{}),
			deny(0, 1, 0, sec-us, sec-us).when(time.Unix(0, 0)),
			at(deny(0, 1, 0, sec-us, sec-us), 1),
			at(deny(0, 1, 0, us, us), 999999),
			at(allow(0, 1, 0, sec), 1e6),
			at(deny(0, 1, 0, sec-us, sec-us), 1e6+1),
		)
	case limiter.SlidingWindow:
		return table(name, l, base,
			allow(0, 1, 0, 2*sec-us),
			deny(0, 1, 0, sec, 2*sec-us).when(time.Time{}), // next window, e = 1µs
			deny(0, 1, 0, sec, 2*sec-us).when(time.Unix(0, 0)),
			at(deny(0, 1, 0, sec, 2*sec-us), 1),
			at(deny(0, 1, 0, 2*us, sec+us), 999999),
			at(deny(0, 1, 0, us, sec), 1e6),
			at(allow(0, 1, 0, 2*sec-us), 1e6+1),
		)
	}
	// sliding_log and the buckets: the request at 1µs counts until 1s+1µs.
	return table(name, l, base,
		allow(0, 1, 0, sec),
		deny(0, 1, 0, sec, sec).when(time.Time{}),
		deny(0, 1, 0, sec, sec).when(time.Unix(0, 0)),
		at(deny(0, 1, 0, sec, sec), 1),
		at(deny(0, 1, 0, 2*us, 2*us), 999999),
		at(deny(0, 1, 0, us, us), 1e6),
		at(allow(0, 1, 0, sec), 1e6+1),
	)
}

// Every time from 2^52µs (2112-09-17T23:53:47.370496Z) on is taken as it:
// there time stands still, and a key never refills. 2^52µs is 370496µs
// into its second.
func after2112(alg limiter.Algorithm) Table {
	name, l := alg.String()+"/after_2112", one(alg, sec)
	later := []time.Time{clampMax, clampMax.Add(year), time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}
	first, atMax, look := allow(0, 1, 0, sec), deny(0, 1, 0, sec-us, sec-us), allow(0, 0, 0, sec-us)
	switch alg {
	case limiter.FixedWindow: // the window ends 629504µs after 2^52µs
		first, atMax, look = allow(0, 1, 0, 629505*us), deny(0, 1, 0, 629504*us, 629504*us), allow(0, 0, 0, 629504*us)
	case limiter.SlidingWindow: // the next window takes it from e = 1µs
		first, atMax, look = allow(0, 1, 0, 1629505*us), deny(0, 1, 0, 629505*us, 1629504*us), allow(0, 0, 0, 1629504*us)
	}
	steps := []Step{first.when(clampMax.Add(-us))}
	for _, t := range later {
		steps = append(steps, atMax.when(t))
	}
	return table(name, l, aligned, append(steps, look.when(later[2]))...)
}

// Times whose microseconds do not fit in an int64 are clamped like any
// other: time.Unix(1<<62+s, 0), in the year 146 billion, is after 2112,
// although its UnixMicro wraps around to s seconds after the epoch.
// 2^52µs is 47370496µs into its minute.
func int64Extremes(alg limiter.Algorithm) Table {
	name, l := alg.String()+"/int64_extremes", one(alg, minute)
	first, atMax, back := allow(0, 1, 0, minute), deny(0, 1, 0, minute, minute), allow(0, 0, 0, minute)
	switch alg {
	case limiter.FixedWindow: // the window ends 12629504µs after 2^52µs
		first, atMax = allow(0, 1, 0, 12629504*us), deny(0, 1, 0, 12629504*us, 12629504*us)
	case limiter.SlidingWindow:
		first, atMax = allow(0, 1, 0, 72629504*us), deny(0, 1, 0, 12629505*us, 72629504*us)
		back = allow(0, 0, 0, 2*minute) // as at the window's start
	}
	return table(name, l, aligned,
		first.when(time.Unix(1<<62+aligned.Unix(), 0)),
		atMax.when(clampMax),
		atMax.when(time.Unix(1<<62, 0)),
		atMax.when(time.Unix(math.MaxInt64, 0)),
		back.when(time.Unix(math.MinInt64, 0)), // 1970: the clock went back
	)
}

// firstAndSecond are the first request on a key under one(alg, minute),
// which passes, and a second at the same instant, which does not.
// sliding_window's Reset runs to the end of the next window, and the next
// window takes the second request from e = 1µs.
func firstAndSecond(alg limiter.Algorithm) (pass, fail Step) {
	if alg == limiter.SlidingWindow {
		return allow(0, 1, 0, 2*minute), deny(0, 1, 0, minute+us, 2*minute)
	}
	return allow(0, 1, 0, minute), deny(0, 1, 0, minute, minute)
}

// keysByEncoding: keys that a naive encoding would confuse are independent.
func keysByEncoding(alg limiter.Algorithm) Table {
	pass, fail := firstAndSecond(alg)
	keys := []store.Key{
		store.NewKey("a_b", "c"), store.NewKey("a", "b_c"),
		store.NewKey("a:b", "c"), store.NewKey("a", "b:c"),
		store.RawKey("a\x00b"), store.RawKey("a\x00c"), store.RawKey("{a}b"), store.RawKey("{a}c"),
	}
	var steps []Step
	for _, k := range keys {
		steps = append(steps, pass.on(k))
	}
	for _, k := range keys {
		steps = append(steps, fail.on(k))
	}
	return table(alg.String()+"/keys_differ_by_encoding", one(alg, minute), aligned, steps...)
}

// extremeCosts: a negative cost is denied, Never, and consumes nothing
// (its decision says nothing of the key: Remaining and Reset are 0). A cost
// that would overflow a count is above the limit like any other.
func extremeCosts(alg limiter.Algorithm) Table {
	pass, fail := firstAndSecond(alg)
	return table(alg.String()+"/extreme_costs", one(alg, minute), aligned,
		never(0, -1, 0, 0),
		pass,
		never(0, -1, 0, 0),
		never(0, math.MinInt64, 0, 0),
		never(0, math.MaxInt64, 0, pass.Want.Reset), // 1 + MaxInt64 wraps
		never(0, math.MaxInt64-1, 0, pass.Want.Reset),
		fail,
	)
}
