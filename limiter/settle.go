package limiter

import (
	"slices"
	"time"
)

// Settle returns s, the state of a key that admitted a request of cost
// reserved (its Decision's Reservation r), once the request's actual cost
// is known at now: a rule that counts only failures refunds a success
// whole (actual 0), and a cost the upstream reports afterwards refunds or
// charges the difference. It also
// returns what a look (cost 0) at now sees of the settled state: its
// Remaining, and its Reset, which a store uses as the key's new expiry.
// Like Decide it is a pure function. A negative actual counts as 0, a
// reserved of 0 or less, or above the burst (no request was ever allowed
// so), as no reservation (s is returned as it is), and a refund is never
// more than reserved. The zero Limit changes nothing. For sliding_log it
// may rewrite the backing array of s.Log, as Decide does.
//
// A refund (actual < reserved) gives back what the reservation took, if
// the key still shows it:
//
//   - fixed_window: the count, if the key is still in the reservation's
//     window; once the window has moved on the refund is void (the next
//     window started from nothing anyway).
//   - sliding_window: the counter of the reservation's window: the current
//     one, or the previous one once the window has moved on by one; after
//     that the refund is void.
//   - sliding_log: the reservation's entry (the entry made at r.At) loses
//     the refund, and is removed at 0; once it has expired the refund is void.
//   - token_bucket, gcra, leaky_bucket: the refund goes back into the
//     bucket, if the reservation is still the key's last spending (as for
//     Cancel: the point the bucket drains to is still r's; looks, denials
//     and time passing do not move it), and as much of it as has not
//     drained away since. Once another request has spent after it, the
//     bucket cannot tell how much of the held cost refill would have let
//     overflow, so the refund is void: giving it back could admit more
//     than Burst at once.
//
// A charge (actual > reserved) adds the difference, as a request that
// cannot be refused. The window algorithms add it where the reservation
// counts (its window's counter, its log entry), and not at all once that
// has expired, as a refund; the buckets take it at now, unless they have
// refilled completely since (the request outlasted a whole refill: the
// key is as good as forgotten, and a store may have forgotten it). A
// charge can leave the key with nothing remaining, so that the next
// requests wait, but never below that: a count stops at the rate and a bucket at empty,
// so no Remaining is ever negative and a cost reported far beyond the
// limit locks the key out for one window or one refill, not many.
func Settle(l Limit, s State, now time.Time, r Reservation, reserved, actual int64) (State, Decision) {
	actual = max(actual, 0)
	if reserved > 0 && reserved <= l.burst && actual != reserved && l.alg != 0 && r.At > 0 {
		s = settle(&l, s, UnixMicro(now), r, reserved, actual)
	}
	look := s
	look.Log = slices.Clone(s.Log) // a look rewrites the log in place
	var d Decision
	l.ApplyInto(&look, now, 0, &d)
	return s, d
}

// settle is Settle's change of state, at t, for the reservation r.
func settle(l *Limit, s State, t int64, r Reservation, reserved, actual int64) State {
	t0 := r.At
	// refund > 0 gives back, charge > 0 adds; each at most a whole burst,
	// so that no product below overflows.
	refund, charge := min(max(reserved-actual, 0), l.burst), min(max(actual-reserved, 0), l.burst)
	switch l.alg {
	case FixedWindow:
		if s.A == windowStart(t0, l.period) {
			s.B = adjust(s.B, refund, charge, l.rate)
		}
	case SlidingWindow:
		prev, curr := s.B>>32, s.B&0xffffffff
		switch w := windowStart(t0, l.period); s.A {
		case w:
			curr = adjust(curr, refund, charge, l.rate)
		case w + l.period:
			prev = adjust(prev, refund, charge, l.rate)
		}
		s.B = prev<<32 | curr
	case SlidingLog:
		s = settleLog(l, s, t0, refund, charge)
	case TokenBucket, GCRA, LeakyBucket:
		if refund > 0 {
			return refundBucket(l, s, r, refund)
		}
		switch l.alg {
		case TokenBucket:
			s.A, s.B = chargeTokens(l, s.A, s.B, t, charge)
		case LeakyBucket:
			s.A, s.B = chargeLevel(l, s.A, s.B, t, charge)
		default:
			s.A, s.B = chargeGCRA(l, s.A, s.B, t, charge)
		}
	}
	return s
}

// refundBucket gives refund requests back into a bucket whose last
// spending was the reservation r, as Cancel does a held request's whole
// cost: what has drained since is not given back.
func refundBucket(l *Limit, s State, r Reservation, refund int64) State {
	need := refund * l.p
	if level, ok := l.lastSpent(&s, r); ok && r.Level >= need {
		l.giveBack(&s, r, need, level)
	}
	return s
}

// adjust returns a window count less refund (never below 0) or plus charge
// (never above the rate, nor lowered if it is already above).
func adjust(count, refund, charge, rate int64) int64 {
	if refund > 0 {
		return count - min(refund, count)
	}
	if count >= rate {
		return count
	}
	return min(count+charge, rate)
}

// settleLog settles on the log entry made at t0, if it is still there.
func settleLog(l *Limit, s State, t0, refund, charge int64) State {
	i, found := slices.BinarySearchFunc(s.Log, t0, func(e Entry, t int64) int { return cmpInt(e.At, t) })
	if !found {
		return s
	}
	if refund > 0 {
		k := min(refund, s.Log[i].Cost)
		s.A -= k
		if s.Log[i].Cost -= k; s.Log[i].Cost == 0 {
			s.Log = slices.Delete(s.Log, i, i+1)
		}
		return s
	}
	k := min(charge, max(l.rate-s.A, 0))
	s.Log[i].Cost += k
	s.A += k
	return s
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// chargeTokens takes charge requests' tokens from a token_bucket at t,
// down to none: chargeLevel on the level the tokens leave empty (capacity
// less the tokens), as tokenBucket decides.
func chargeTokens(l *Limit, tokens, last, t, charge int64) (int64, int64) {
	capacity := l.burst * l.p
	level, at := chargeLevel(l, capacity-tokens, last, t, charge)
	return capacity - level, at
}

// chargeLevel pours charge requests into a leaky_bucket at t, up to full
// (requests held for their turn may have filled it beyond: it takes
// nothing then). A bucket drained empty by t (the request outlasted a
// whole drain) is as good as a key forgotten, which a store no longer
// holds: it takes nothing either.
func chargeLevel(l *Limit, level, last, t, charge int64) (int64, int64) {
	capacity := l.burst * l.p
	now, at := level, last
	if t > last { // a clock gone back drains nothing
		now, at = drain(level, t-last, l.n), t
	}
	if last == 0 || now <= 0 || now >= capacity { // drained (as good as forgotten), or full
		return level, last
	}
	return min(now+charge*l.p, capacity), at
}

// chargeGCRA pushes the theoretical arrival time on by charge requests at
// t, no further than a full bucket ahead of t; a bucket drained empty by
// t takes nothing, as chargeLevel.
func chargeGCRA(l *Limit, tat, frac, t, charge int64) (int64, int64) {
	capacity := l.burst * l.p
	level := int64(0)
	if tat >= t {
		if ahead := tat - t; ahead > l.full {
			return tat, frac // already beyond full: as gcra reads it, full
		}
		level = min((tat-t)*l.n+frac, capacity)
	}
	if level >= capacity || level == 0 { // nothing left to take, or drained: as good as forgotten
		return tat, frac
	}
	level = min(level+charge*l.p, capacity)
	q := div(level, l.n)
	return t + q, level - q*l.n
}
