package limiter

import (
	"math"
	"time"
)

// Never is the RetryAfter of a request whose cost is more than the limit can
// ever allow at once: waiting does not help.
const Never time.Duration = math.MaxInt64

// Decision is the answer for one request.
type Decision struct {
	// Allowed reports whether the request may pass. When it is false the
	// state was not changed: a denied request consumes nothing.
	Allowed bool
	// Limit is the most the key may spend at once: the rate for the window
	// algorithms, the burst for the bucket algorithms.
	Limit int64
	// Remaining is what the key may still spend now, 0 <= Remaining <= Limit.
	Remaining int64
	// RetryAfter is 0 when allowed. When denied it is the earliest moment,
	// from now, at which the same request (same cost) would pass if nothing
	// else happens; Never if its cost exceeds what the limit can ever allow.
	RetryAfter time.Duration
	// Reset is how long, from now, until the key is back at its full limit
	// if nothing else happens (0 when it is already). A store may forget the
	// key's state after Reset: the state can no longer change a decision.
	Reset time.Duration
	// Refill is how long, from now, until Remaining grows by at least one
	// unit if nothing else happens: the RetryAfter a request costing
	// Remaining+1 would get. It is 0 when Remaining is Limit, and at most
	// Reset. For a denied request of cost 1 it equals RetryAfter (for a
	// limit without a delay).
	Refill time.Duration
	// Delay is, for an allowed request under a limit with a delay
	// (Limit.WithDelay), how long it must be held before it goes on: its
	// turn in the bucket's queue. 0 means at once. Its cost is already
	// counted; Reservation identifies it for Cancel.
	Delay time.Duration
	// Reservation is, for an allowed request that spent (cost above 0),
	// what identifies its cost in the key's state, in the store's time:
	// what Cancel needs to give back a request held for its turn, and
	// Settle to settle a request at its actual cost. The zero Reservation
	// for a denial or a look.
	Reservation Reservation
}

// State is what an algorithm remembers about one key between decisions: a
// small value that a store persists. The zero State is a key never seen.
// A State is read under the Limit it was written under; under another,
// Reinterpret it first.
// The meaning of A and B depends on the algorithm:
//
//	fixed_window    A = window start (µs since the epoch), B = count
//	sliding_window  A = current window start (µs), B = previous<<32 | current count
//	token_bucket    A = tokens (units of 1/n), B = last update (µs)
//	gcra            A = theoretical arrival time (µs), B = its fraction (units of 1/n µs)
//	leaky_bucket    A = level (units of 1/n), B = last update (µs)
//
// sliding_log keeps its entries in Log, oldest first, at most Rate of them,
// and their total cost in A.
type State struct {
	A, B int64
	Log  []Entry
}

// Entry is one admitted request in a sliding_log: when, and how much it cost.
type Entry struct {
	At   int64 // microseconds since the Unix epoch
	Cost int64
}

// Decide decides whether a request of the given cost may pass at now, for a
// key whose state is s, and returns the decision and the key's new state.
// It is a pure function: it does no I/O and reads no clock. A cost of 0
// looks without consuming. A negative cost, or the zero Limit, is denied
// with RetryAfter Never.
//
// Times are taken in whole microseconds and clamped to the years 1970 to
// 2112. A clock that goes backwards never admits more than the limit: the
// algorithms treat the lost time as not having passed.
//
// A denied request returns s itself: nothing changes. An allowed request
// whose Reset is 0 returns the zero State (with s.Log's array, emptied): the
// key is then as good as one never seen, and a store may forget it. For an
// allowed sliding_log request, Decide reuses the backing array of s.Log.
func Decide(l Limit, s State, now time.Time, cost int64) (d Decision, next State) {
	l.ApplyInto(&s, now, cost, &d)
	return d, s
}

// Apply is Decide for a state the caller holds: it decides and updates *s
// in place, leaving it as it was when the request is denied. Stores use it
// to save copying the limit and the state in and out on every decision.
func (l *Limit) Apply(s *State, now time.Time, cost int64) Decision {
	var d Decision
	l.ApplyInto(s, now, cost, &d)
	return d
}

// ApplyInto is Apply writing the decision to *d instead of returning it.
// A Decision is too large for the compiler to keep in registers, so every
// return by value copies it through memory; a store's hot path that calls
// ApplyInto with the Decision it will return saves that copy.
func (l *Limit) ApplyInto(s *State, now time.Time, cost int64, d *Decision) {
	l.ApplyMicros(s, UnixMicro(now), cost, d)
}

// ApplyMicros is ApplyInto at t, the time as UnixMicro returns it
// (microseconds since the epoch, from 1 to 2^52): a store that also needs
// the time in microseconds (for when the key expires) converts it once.
func (l *Limit) ApplyMicros(s *State, t, cost int64, d *Decision) {
	if l.alg == 0 || cost < 0 { // l.IsZero() would copy *l
		*d = Decision{Limit: l.burst, RetryAfter: Never}
		return
	}
	t = min(max(t, 1), maxTimeUsec)
	// The counters travel in registers: only sliding_log, which has a Log,
	// copies its State in and out.
	var a, b int64
	switch l.alg {
	case FixedWindow:
		a, b = fixedWindow(l, s.A, s.B, t, cost, d)
	case SlidingWindow:
		a, b = slidingWindow(l, s.A, s.B, t, cost, d)
	case SlidingLog:
		if next := slidingLog(l, *s, t, cost, d); d.Allowed && d.Reset != 0 {
			*s = next
			return
		}
	case TokenBucket:
		a, b = tokenBucket(l, s.A, s.B, t, cost, d)
	case GCRA:
		a, b = gcra(l, s.A, s.B, t, cost, d)
	default:
		a, b = leakyBucket(l, s.A, s.B, t, cost, d)
	}
	switch {
	case !d.Allowed: // a denial changes nothing, not even what a late clock would see
	case d.Reset == 0:
		*s = State{Log: s.Log[:0]} // as good as a key never seen
	default: // the other algorithms leave the Log alone
		s.A, s.B = a, b
	}
}

// UnixMicro returns now in microseconds since the epoch, clamped to
// [1, 2^52] without overflowing for any time.Time: the time every
// algorithm works with. Stores that compute elsewhere (Redis) convert with it.
func UnixMicro(now time.Time) int64 {
	sec := now.Unix()
	switch {
	case sec < 0:
		return 1
	case sec > maxTimeUsec/1_000_000:
		return maxTimeUsec
	}
	return min(max(sec*1e6+int64(now.Nanosecond()/1e3), 1), maxTimeUsec)
}

func usec(us int64) time.Duration { return time.Duration(us) * time.Microsecond }

// ceilDiv returns ceil(a/b) for a >= 0, b > 0. Most limits have b == 1
// (the period is a multiple of the rate), and a division costs dozens of
// cycles: that case skips it, as does a <= b (1, or 0 for a == 0: such as
// the Reset and Refill of a bucket of more than one request per
// microsecond that holds at most a microsecond's worth).
func ceilDiv(a, b int64) int64 {
	switch {
	case b == 1:
		return a
	case a <= b:
		return min(a, 1)
	}
	return (a + b - 1) / b
}

// div returns a/b for a >= 0, b > 0, skipping the division for b == 1 and
// for a < b (such as a gcra key of more than one request per microsecond
// whose bucket is all but empty). A state that is not one the algorithms
// left can make a negative: it is divided as before.
func div(a, b int64) int64 {
	switch {
	case b == 1:
		return a
	case 0 <= a && a < b:
		return 0
	}
	return a / b
}
