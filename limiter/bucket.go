package limiter

import "time"

// The three bucket algorithms admit the same traffic: a bucket of Burst
// requests that refills (or drains) at Rate per Period. They differ in what
// they remember. All count in units of 1/n microsecond, where one request is
// p units and one microsecond is n units (see Limit), so refill is exact.

// tokenBucket holds tokens that refill continuously up to the burst; a
// request takes cost tokens. A new key starts full. Its counters are the
// tokens and the time they were counted at, 0 for a new key. Requests held
// for their turn (a limit with a delay) take tokens the bucket does not
// have yet: the tokens go below 0, down to the delay's worth.
func tokenBucket(l *Limit, tokens, last, t, cost int64, d *Decision) (int64, int64) {
	capacity := l.burst * l.p
	if last == 0 {
		tokens, last = capacity, t
	}
	if t < last { // the clock went back: no refill
		t = last
	}
	level := admit(l, min(drain(capacity-tokens, t-last, l.n), l.top), t, cost, d)
	return capacity - level, t
}

// leakyBucket is the leaky bucket: every request pours cost into a bucket
// that leaks at the rate. Without a delay it is a meter: a request that
// would overflow the bucket is rejected. With one it is also a queue: a
// request that would overflow it by at most the delay's worth is held until
// enough has leaked (Decision.Delay). Its counters are the level and the
// time it was measured at, 0 for a new key.
func leakyBucket(l *Limit, level, last, t, cost int64, d *Decision) (int64, int64) {
	if last == 0 {
		level, last = 0, t
	}
	if t < last { // the clock went back: no leak
		t = last
	}
	return admit(l, min(drain(level, t-last, l.n), l.top), t, cost, d), t
}

// gcra is the generic cell rate algorithm: it remembers only the theoretical
// arrival time (TAT) of the next request, as whole microseconds (tat) plus a
// fraction in units of 1/n (frac). A request fits if the TAT, pushed on by
// its cost, stays within burst intervals of now (burst intervals and the
// delay, for a request held for its turn). Without a last-update time, a
// clock that goes back makes the key look fuller, never emptier (at most
// full, with what the delay lets queue).
func gcra(l *Limit, tat, frac, t, cost int64, d *Decision) (int64, int64) {
	level := int64(0) // (TAT - t) in units
	if tat >= t {
		if ahead := tat - t; ahead > l.full {
			level = l.top
		} else {
			level = min(ahead*l.n+frac, l.top)
		}
	}
	level = admit(l, level, t, cost, d)
	if !d.Allowed || cost == 0 { // the TAT stays as it was
		return tat, frac
	}
	q := div(level, l.n)
	return t + q, level - q*l.n
}

// admit decides a request of cost at t on a bucket filled to level (units)
// and returns the level after it, writing the decision to *d. The level is
// at most l.top: a bucket fuller than its burst and queue (held requests
// under a delay since shortened) reads as full with a full queue. A request
// that fits passes at once; one that overflows the bucket by at most the
// limit's queue (its delay's worth) passes after Delay, the time that much
// takes to drain. An allowed request that spends has a Reservation: the
// time and the level just after it, what Cancel and Settle need.
func admit(l *Limit, level, t, cost int64, d *Decision) int64 {
	capacity := l.burst * l.p
	*d = Decision{Limit: l.burst}
	switch need := cost * l.p; {
	case cost > l.burst:
		d.RetryAfter = Never
	case level+need <= capacity || need == 0: // a look is never held
		d.Allowed = true
		if need > 0 {
			level += need
			d.Reservation = Reservation{At: t, Level: level}
		}
	case level+need-capacity <= l.queue:
		d.Allowed = true
		d.Delay = usec(ceilDiv(level+need-capacity, l.n))
		level += need
		d.Reservation = Reservation{At: t, Level: level}
	default:
		d.RetryAfter = usec(ceilDiv(level+need-capacity-l.queue, l.n))
	}
	d.Remaining = max(div(capacity-level, l.p), 0)
	d.Reset = usec(ceilDiv(level, l.n))
	d.Refill = refill(l, capacity-level, d.Remaining)
	return level
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
