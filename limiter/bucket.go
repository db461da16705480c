package limiter

import "time"

// The three bucket algorithms admit the same traffic: a bucket of Burst
// requests that refills (or drains) at Rate per Period. They differ in what
// they remember. All count in units of 1/n microsecond, where one request is
// p units and one microsecond is n units (see Limit), so refill is exact.

// tokenBucket holds tokens that refill continuously up to the burst; a
// request takes cost tokens. A new key starts full. Its counters are the
// tokens and the time they were counted at, 0 for a new key.
func tokenBucket(l *Limit, tokens, last, t, cost int64, d *Decision) (int64, int64) {
	capacity := l.burst * l.p
	if last == 0 {
		tokens, last = capacity, t
	}
	if t < last { // the clock went back: no refill
		t = last
	}
	tokens = capacity - drain(capacity-tokens, t-last, l.n)
	*d = Decision{Limit: l.burst}
	switch need := cost * l.p; {
	case cost > l.burst:
		d.RetryAfter = Never
	case need <= tokens:
		d.Allowed = true
		tokens -= need
	default:
		d.RetryAfter = usec(ceilDiv(need-tokens, l.n))
	}
	d.Remaining = div(tokens, l.p)
	d.Reset = usec(ceilDiv(capacity-tokens, l.n))
	d.Refill = refill(l, tokens, d.Remaining)
	return tokens, t
}

// leakyBucket is the leaky bucket as a meter: every request pours cost into a
// bucket that leaks at the rate; a request that would overflow it is
// rejected (queueing the overflow instead is throttling's business). Its
// counters are the level and the time it was measured at, 0 for a new key.
func leakyBucket(l *Limit, level, last, t, cost int64, d *Decision) (int64, int64) {
	capacity := l.burst * l.p
	if last == 0 {
		level, last = 0, t
	}
	if t < last { // the clock went back: no leak
		t = last
	}
	level = drain(level, t-last, l.n)
	*d = Decision{Limit: l.burst}
	switch need := cost * l.p; {
	case cost > l.burst:
		d.RetryAfter = Never
	case level+need <= capacity:
		d.Allowed = true
		level += need
	default:
		d.RetryAfter = usec(ceilDiv(level+need-capacity, l.n))
	}
	d.Remaining = div(capacity-level, l.p)
	d.Reset = usec(ceilDiv(level, l.n))
	d.Refill = refill(l, capacity-level, d.Remaining)
	return level, t
}

// gcra is the generic cell rate algorithm: it remembers only the theoretical
// arrival time (TAT) of the next request, as whole microseconds (tat) plus a
// fraction in units of 1/n (frac). A request fits if the TAT, pushed on by
// its cost, stays within burst intervals of now. Without a last-update time,
// a clock that goes back makes the key look fuller, never emptier (at most
// full).
func gcra(l *Limit, tat, frac, t, cost int64, d *Decision) (int64, int64) {
	capacity := l.burst * l.p
	level := int64(0) // (TAT - t) in units
	if tat >= t {
		if ahead := tat - t; ahead > l.full {
			level = capacity
		} else {
			level = min(ahead*l.n+frac, capacity)
		}
	}
	*d = Decision{Limit: l.burst}
	switch need := cost * l.p; {
	case cost > l.burst:
		d.RetryAfter = Never
	case level+need <= capacity:
		d.Allowed = true
		if need > 0 {
			level += need
			q := div(level, l.n)
			frac = level - q*l.n
			d.Remaining = div(capacity-level, l.p)
			d.Reset = usec(q + min(frac, 1)) // ceil(level/n), from the one division
			d.Refill = refill(l, capacity-level, d.Remaining)
			return t + q, frac
		}
	default:
		d.RetryAfter = usec(ceilDiv(level+need-capacity, l.n))
	}
	d.Remaining = div(capacity-level, l.p)
	d.Reset = usec(ceilDiv(level, l.n))
	d.Refill = refill(l, capacity-level, d.Remaining)
	return tat, frac
}

// refill returns how long until a bucket with free units of room (remaining
// whole requests) has room for one more request: Decision.Refill. 0 when
// it is full.
func refill(l *Limit, free, remaining int64) time.Duration {
	if remaining >= l.burst {
		return 0
	}
	return usec(ceilDiv((remaining+1)*l.p-free, l.n))
}

// drain returns level less what elapsed microseconds take away at n units
// each, never below 0, without overflowing on long idle gaps.
func drain(level, elapsed, n int64) int64 {
	if elapsed >= ceilDiv(level, n) {
		return 0
	}
	return level - elapsed*n
}
