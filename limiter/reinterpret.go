package limiter

import (
	"math/bits"
	"time"
)

// Reinterpret returns s, a key's state last written under the limit from,
// as the state of the same key under the limit to at now: what a store must
// do before deciding under a limit that has changed (a reloaded rule, a
// client moved to another plan), so that the key keeps what it has spent
// instead of starting fresh. It is a pure function, like Decide; a store
// keeps, with every state, the limit it wrote it under, and saves the
// reinterpreted state whatever the decision that follows it.
//
// What the key has spent is kept, and read under the new limit:
//
//   - fixed_window: the count. With another period the windows move: the
//     count of the old window holding now (none once it has ended) becomes
//     the count of the new window holding now.
//   - sliding_window: both counts. With another period, the old estimate
//     at now (the previous window's share plus the current count) becomes
//     the count of the new window holding now.
//   - sliding_log: the entries, which count for the new period from the
//     time they were made.
//   - token_bucket, gcra, leaky_bucket: how full the bucket is, in
//     requests: drained at the old rate up to now, then counted in the new
//     limit's units (a fraction of a unit rounded up), and at most the new
//     burst. The bucket then drains at the new rate.
//
// A count above the new rate, like a bucket filled to the new burst, leaves
// nothing remaining until it has expired or drained under the new limit;
// a look (cost 0) is still allowed.
// A change of algorithm starts fresh: one algorithm's state says nothing
// of another's. The zero State, and a state of the limit to itself, are
// returned as they are; the zero Limit as from or to gives a fresh state.
// A delay is not part of what a state means: limits that differ only in
// it return s as it is. A bucket holding requests for their turn (fuller
// than its burst) is read as full under a changed limit: the held requests
// still pass when their hold ends, but the new limit does not count them.
func Reinterpret(from, to Limit, s State, now time.Time) State {
	switch {
	case from.Same(&to): // a changed delay reads the state as it is
		return s
	case from.alg != to.alg || from.alg == 0 || to.alg == 0:
		return State{Log: s.Log[:0]}
	}
	t := UnixMicro(now)
	switch to.alg {
	case FixedWindow:
		s.A, s.B = rebaseFixed(&from, &to, s.A, s.B, t)
	case SlidingWindow:
		s.A, s.B = rebaseSliding(&from, &to, s.A, s.B, t)
	case SlidingLog: // the entries are kept as they are
	case TokenBucket:
		if s.B != 0 { // else a new key, full
			level, last := rebaseLevel(&from, &to, from.burst*from.p-s.A, s.B, t)
			s.A, s.B = to.burst*to.p-level, last
			if level == 0 {
				s.A, s.B = 0, 0
			}
		}
	case GCRA:
		s.A, s.B = rebaseGCRA(&from, &to, s.A, s.B, t)
	default:
		if s.B != 0 {
			s.A, s.B = rebaseLevel(&from, &to, s.A, s.B, t)
		}
	}
	return s
}

// rebaseFixed moves a fixed_window count to the window of the new period
// that holds t, if the old window still holds it.
func rebaseFixed(from, to *Limit, start, count, t int64) (int64, int64) {
	if from.period == to.period || count == 0 {
		return start, count
	}
	t = max(t, start) // a clock gone back: time that is lost has not passed
	if t >= start+from.period {
		return 0, 0
	}
	return windowStart(t, to.period), count
}

// rebaseSliding makes the old estimate at t the count of the new period's
// window that holds t.
func rebaseSliding(from, to *Limit, start, counts, t int64) (int64, int64) {
	if from.period == to.period || counts == 0 {
		return start, counts
	}
	t = max(t, start)
	prev, curr := counts>>32, counts&0xffffffff
	switch windowStart(t, from.period) {
	case start:
	case start + from.period:
		prev, curr = curr, 0
	default:
		return 0, 0
	}
	used := min(weighted(prev, t-windowStart(t, from.period), from.period)+curr, from.rate)
	if used == 0 {
		return 0, 0
	}
	return windowStart(t, to.period), used
}

// rebaseLevel takes the level of a token_bucket or leaky_bucket (the used
// part of the bucket, in from's units, at time last) to t under from and
// converts it to to's units. It returns the level and the time, t or, for
// a clock gone back, last; or 0, 0 for an empty bucket: a fresh state, as
// Decide leaves one. A bucket fuller than from's burst (requests held for
// their turn) reads as full.
func rebaseLevel(from, to *Limit, level, last, t int64) (int64, int64) {
	t = max(t, last)
	level = min(drain(max(level, 0), t-last, from.n), from.burst*from.p)
	if level = convertLevel(from, to, level); level == 0 {
		return 0, 0
	}
	return level, t
}

// rebaseGCRA converts a gcra state: its level at t under from (as gcra
// computes it, a clock gone back making the key look fuller) becomes a
// theoretical arrival time under to.
func rebaseGCRA(from, to *Limit, tat, frac, t int64) (int64, int64) {
	level := int64(0)
	if tat >= t {
		if ahead := tat - t; ahead > from.full {
			level = from.burst * from.p
		} else {
			level = min(ahead*from.n+frac, from.burst*from.p)
		}
	}
	level = convertLevel(from, to, level)
	if level == 0 {
		return 0, 0
	}
	q := level / to.n
	return t + q, level - q*to.n
}

// convertLevel converts a bucket level from from's units (one request is
// from.p) to to's, rounding a fraction of a unit up, and caps it at to's
// capacity. The product level*to.p can pass 2^63, so the fraction's part
// is computed in 128 bits; the stores that mirror it compute the same
// number exactly (the Redis scripts in chunks of 7 bits).
func convertLevel(from, to *Limit, level int64) int64 {
	q, r := level/from.p, level%from.p
	if q >= to.burst {
		return to.burst * to.p
	}
	hi, lo := bits.Mul64(uint64(r), uint64(to.p))
	f, rem := bits.Div64(hi, lo, uint64(from.p)) // hi < from.p: the quotient is below to.p
	if rem > 0 {
		f++
	}
	return q*to.p + int64(f)
}
