package limiter

import "math"

// windowStart returns the start of the period-long window holding t. Windows
// are multiples of the period since the Unix epoch, so that separate
// instances agree on them.
func windowStart(t, period int64) int64 { return t - t%period }

// fixedWindow counts requests in epoch-aligned windows of one period. Its
// counters are the window's start and its count.
func fixedWindow(l *Limit, last, lastCount, t, cost int64, d *Decision) (int64, int64) {
	start := windowStart(t, l.period)
	count := int64(0)
	switch {
	case start == last:
		count = lastCount
	case start < last: // the clock went back: keep counting in the newer window
		start, t, count = last, last, lastCount
	}
	end := start + l.period
	*d = Decision{Limit: l.rate}
	switch {
	case cost > l.rate: // checked first: count+cost must not overflow
		d.RetryAfter = Never
	case count+cost <= l.rate || cost == 0: // a count kept from a higher rate denies no look
		count += cost
		d.Allowed = true
		if cost > 0 {
			d.Reservation = Reservation{At: t, Level: count}
		}
	default:
		d.RetryAfter = usec(end - t)
	}
	d.Remaining = max(l.rate-count, 0) // a count kept from a higher rate can exceed it
	if count > 0 {                     // all of it comes back at once, at the window's end
		d.Reset = usec(end - t)
		d.Refill = d.Reset
	}
	return start, count
}

// slidingWindow estimates the count over the last period from two
// epoch-aligned window counters: all of the current window's and the share
// of the previous window's that the sliding period still covers, assuming
// the previous window's requests were spread evenly. Its counters are the
// current window's start and both counts, packed as previous<<32 | current.
func slidingWindow(l *Limit, last, counts, t, cost int64, d *Decision) (int64, int64) {
	start := windowStart(t, l.period)
	prev, curr := counts>>32, counts&0xffffffff
	switch {
	case start == last:
	case start < last: // the clock went back: stay in the newer window
		start, t = last, last
	case start == last+l.period:
		prev, curr = curr, 0
	default:
		prev, curr = 0, 0
	}
	e := t - start
	// A clock gone back within the window weighs the previous window more
	// and can push the estimate past the rate: stay at the rate then.
	used := min(weighted(prev, e, l.period)+curr, l.rate)
	*d = Decision{Limit: l.rate}
	switch {
	case cost > l.rate: // checked first: used+cost must not overflow
		d.RetryAfter = Never
	case used+cost <= l.rate:
		d.Allowed = true
		curr += cost
		used += cost
		if cost > 0 {
			d.Reservation = Reservation{At: t, Level: curr}
		}
	default:
		d.RetryAfter = usec(slidingRetry(l, prev, curr, e, cost))
	}
	d.Remaining = max(l.rate-used, 0)
	if d.Remaining < l.rate { // when a request of Remaining+1 would first fit
		d.Refill = usec(slidingRetry(l, prev, curr, e, d.Remaining+1))
	}
	switch {
	case curr > 0:
		d.Reset = usec(start + 2*l.period - t)
	case prev > 0:
		d.Reset = usec(start + l.period - t)
	}
	return start, prev<<32 | curr
}

// weighted is the previous window's share of the sliding period at elapsed
// time e into the current window: floor(prev * (period-e) / period). It is
// computed in IEEE-754 doubles, operation for operation as the Redis Lua
// script computes it, so that both stores round alike; it is exact while
// prev*(period-e) < 2^53.
func weighted(prev, e, period int64) int64 {
	x := float64(prev) * float64(period-e)
	return int64(math.Floor(x / float64(period)))
}

// slidingRetry returns how long after elapsed time e a request of cost
// (cost <= rate) first fits: later in this window, in the next one (where
// the current count becomes the previous one), or at the start of the one
// after, when both counters are empty.
func slidingRetry(l *Limit, prev, curr, e, cost int64) int64 {
	if room := l.rate - curr - cost; room >= 0 {
		if at, ok := firstFit(prev, room, e+1, l.period); ok {
			return at - e
		}
	}
	next := l.period - e
	if at, ok := firstFit(curr, l.rate-cost, 0, l.period); ok {
		return next + at
	}
	return next + l.period
}

// firstFit returns the least elapsed time x in [lo, period) at which
// weighted(prev, x, period) <= room: weighted does not grow with x. Every
// allowed decision asks it (for Refill), so it first tries where the
// arithmetic puts x, floor(prev·(period−x)/period) <= room exactly when
// x > period − (room+1)·period/prev, and keeps that answer if weighted
// confirms it; else it searches. Either way the answer is the search's.
// (BenchmarkDecide/sliding_window and BenchmarkSlidingWindowFull measure
// what the guess saves.)
func firstFit(prev, room, lo, period int64) (int64, bool) {
	hi := period - 1
	if lo > hi || weighted(prev, hi, period) > room {
		return 0, false
	}
	if prev <= 0 {
		return lo, true
	}
	x := period + 1 - int64(math.Ceil(float64(room+1)*float64(period)/float64(prev)))
	x = min(max(x, lo), hi)
	for range 3 { // doubles' rounding may put the guess a step off
		switch {
		case weighted(prev, x, period) > room:
			x++ // x < hi, since weighted(prev, hi, period) <= room
		case x > lo && weighted(prev, x-1, period) <= room:
			x--
		default:
			return x, true
		}
	}
	for lo < hi {
		mid := lo + (hi-lo)/2
		if weighted(prev, mid, period) <= room {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo, true
}
