package limiter_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// run is one key's history in FuzzDecideInvariants.
type run struct {
	t        *testing.T
	l        limiter.Limit
	s        limiter.State
	first    int64 // earliest clamped time so far; 0 before the first step
	latest   int64 // latest clamped time so far
	monotone bool  // time never went back
	admitted []admission
}

// admission is an admitted request: when (clamped µs) and its cost.
type admission struct{ at, cost int64 }

func newRun(t *testing.T, l limiter.Limit) *run { return &run{t: t, l: l, monotone: true} }

func clone(s limiter.State) limiter.State {
	s.Log = slices.Clone(s.Log)
	return s
}

func sameState(a, b limiter.State) bool {
	return a.A == b.A && a.B == b.B && slices.Equal(a.Log, b.Log)
}

// decide decides from a copy of s, which Decide may not change.
func (r *run) decide(s limiter.State, at, cost int64) limiter.Decision {
	d, _ := limiter.Decide(r.l, clone(s), time.UnixMicro(at), cost)
	return d
}

// step decides one request at raw µs since the epoch and checks it.
func (r *run) step(raw, cost int64) {
	r.t.Helper()
	t := clamp(raw)
	forward := t >= r.latest // no time seen so far is later
	if r.first == 0 {
		r.first = t
	}
	r.monotone = r.monotone && forward
	d, next := limiter.Decide(r.l, clone(r.s), time.UnixMicro(raw), cost)
	if again, _ := limiter.Decide(r.l, clone(r.s), time.UnixMicro(raw), cost); again != d {
		r.t.Fatalf("Decide is not a function of its arguments: %+v then %+v", d, again)
	}
	r.checkDecision(d, cost)
	r.checkNoLimit(raw, cost)
	if !d.Allowed {
		r.checkUnchanged(next, t, raw, cost)
	}
	// What the decision says of the key; a negative cost or the zero Limit
	// gets one that says nothing of it (Remaining and Reset are 0).
	if cost >= 0 && !r.l.IsZero() {
		r.checkRemaining(d, next, raw)
		if forward {
			r.checkRetryAfter(d, next, t, cost)
			r.checkReset(d, next, t, cost)
			r.checkRefill(d, next, t)
		}
	}
	if d.Allowed && cost > 0 {
		r.admitted = append(r.admitted, admission{t, cost})
	}
	r.s, r.first, r.latest = next, min(r.first, t), max(r.latest, t)
}

// checkDecision checks the decision's fields against each other.
func (r *run) checkDecision(d limiter.Decision, cost int64) {
	r.t.Helper()
	burst := r.l.Burst()
	if d.Limit != burst || d.Remaining < 0 || d.Remaining > d.Limit || d.Reset < 0 || d.Reset%time.Microsecond != 0 {
		r.t.Fatalf("%v cost %d: %+v: want Limit %d, 0 <= Remaining <= Limit, Reset >= 0 in whole µs", r.l, cost, d, burst)
	}
	if d.Allowed != (d.RetryAfter == 0) || d.RetryAfter < 0 || (d.RetryAfter != limiter.Never && d.RetryAfter%time.Microsecond != 0) {
		r.t.Fatalf("%v cost %d: %+v: want RetryAfter 0 exactly when allowed, else > 0 in whole µs", r.l, cost, d)
	}
	impossible := r.l.IsZero() || cost < 0 || cost > burst
	if impossible != (d.RetryAfter == limiter.Never) {
		r.t.Fatalf("%v cost %d: %+v: RetryAfter Never exactly when the cost can never pass", r.l, cost, d)
	}
}

// checkNoLimit: the zero Limit and a negative cost are denied, Never, and
// change nothing.
func (r *run) checkNoLimit(raw, cost int64) {
	r.t.Helper()
	s := clone(r.s)
	if d, next := limiter.Decide(limiter.Limit{}, s, time.UnixMicro(raw), cost); d.Allowed || d.RetryAfter != limiter.Never || d.Limit != 0 || !sameState(next, r.s) {
		r.t.Fatalf("zero Limit, cost %d: %+v, state %+v -> %+v", cost, d, r.s, next)
	}
	neg := -1 - max(cost, 0)
	if d, next := limiter.Decide(r.l, s, time.UnixMicro(raw), neg); d.Allowed || d.RetryAfter != limiter.Never || !sameState(next, r.s) {
		r.t.Fatalf("%v cost %d: %+v, state %+v -> %+v", r.l, neg, d, r.s, next)
	}
}

// checkRemaining: Remaining is exactly what may still be spent now.
func (r *run) checkRemaining(d limiter.Decision, next limiter.State, raw int64) {
	r.t.Helper()
	look := r.decide(next, raw, 0)
	if !look.Allowed || look.Remaining != d.Remaining {
		r.t.Fatalf("%v: a look after %+v gives %+v", r.l, d, look)
	}
	if d.Remaining > 0 && !r.decide(next, raw, d.Remaining).Allowed {
		r.t.Fatalf("%v: Remaining %d, but a request of that cost is denied", r.l, d.Remaining)
	}
	if d.Remaining < d.Limit && r.decide(next, raw, d.Remaining+1).Allowed {
		r.t.Fatalf("%v: Remaining %d, but a request of cost %d passes", r.l, d.Remaining, d.Remaining+1)
	}
}

// checkUnchanged: a denied request leaves the key behaving as before, now
// and later.
func (r *run) checkUnchanged(next limiter.State, t, raw, cost int64) {
	r.t.Helper()
	period := int64(r.l.Period() / time.Microsecond)
	for _, at := range []int64{raw, t + 1, t + period/3, t + period, t + 2*period + 1} {
		for _, c := range []int64{0, 1, cost} {
			if before, after := r.decide(r.s, at, c), r.decide(next, at, c); before != after {
				r.t.Fatalf("%v: after a denied request of cost %d at %d, cost %d at %d gives %+v, before it %+v",
					r.l, cost, t, c, at, after, before)
			}
		}
	}
}

// checkRetryAfter: a denied request passes RetryAfter later, not 1µs
// sooner (time going only forward since).
func (r *run) checkRetryAfter(d limiter.Decision, next limiter.State, t, cost int64) {
	r.t.Helper()
	if d.Allowed || d.RetryAfter == limiter.Never {
		return
	}
	retry := int64(d.RetryAfter / time.Microsecond)
	if t+retry > maxTime {
		return
	}
	if late := r.decide(next, t+retry, cost); !late.Allowed {
		r.t.Fatalf("%v: cost %d denied at %d with RetryAfter %v, and denied again then: %+v\nstate %+v", r.l, cost, t, d.RetryAfter, late, next)
	}
	if early := r.decide(next, t+retry-1, cost); early.Allowed {
		r.t.Fatalf("%v: cost %d denied at %d with RetryAfter %v, but allowed 1µs sooner: %+v\nstate %+v", r.l, cost, t, d.RetryAfter, early, next)
	}
}

// checkReset: after Reset the key is at its full limit and behaves as a key
// never seen (a store may forget it); for all but sliding_window, whose
// Reset is an upper bound, it is not full 1µs sooner.
func (r *run) checkReset(d limiter.Decision, next limiter.State, t, cost int64) {
	r.t.Helper()
	reset := int64(d.Reset / time.Microsecond)
	at := t + reset
	if at > maxTime {
		return
	}
	for _, c := range []int64{0, 1, cost} {
		known, fresh := r.decide(next, at, c), r.decide(limiter.State{}, at, c)
		if known != fresh || (c == 0 && known.Remaining != d.Limit) {
			r.t.Fatalf("%v: Reset %v at %d, then cost %d gives %+v; a new key gets %+v", r.l, d.Reset, t, c, known, fresh)
		}
	}
	if reset > 0 && r.l.Algorithm() != limiter.SlidingWindow {
		if early := r.decide(next, at-1, 0); early.Remaining == d.Limit {
			r.t.Fatalf("%v: Reset %v at %d, but full 1µs sooner: %+v", r.l, d.Reset, t, early)
		}
	}
}

// checkRefill: Refill is 0 exactly when the key is full, at most Reset,
// and Remaining grows then, not 1µs sooner (time going only forward
// since).
func (r *run) checkRefill(d limiter.Decision, next limiter.State, t int64) {
	r.t.Helper()
	if d.Refill < 0 || d.Refill > d.Reset || (d.Refill == 0) != (d.Remaining == d.Limit) || d.Refill%time.Microsecond != 0 {
		r.t.Fatalf("%v: %+v: want 0 <= Refill <= Reset in whole µs, 0 exactly when Remaining is Limit", r.l, d)
	}
	refill := int64(d.Refill / time.Microsecond)
	if refill == 0 || t+refill > maxTime {
		return
	}
	if later := r.decide(next, t+refill, 0); later.Remaining <= d.Remaining {
		r.t.Fatalf("%v: Refill %v at %d, but Remaining is still %d then: %+v\nstate %+v", r.l, d.Refill, t, d.Remaining, later, next)
	}
	if early := r.decide(next, t+refill-1, 0); early.Remaining != d.Remaining {
		r.t.Fatalf("%v: Refill %v at %d, but Remaining is %d 1µs sooner: %+v\nstate %+v", r.l, d.Refill, t, early.Remaining, early, next)
	}
}

// checkBounds checks the most that may pass: over the whole run for any
// clock, and per window or interval while time went only forward.
func (r *run) checkBounds() {
	r.t.Helper()
	if r.l.IsZero() || len(r.admitted) == 0 {
		return
	}
	total := int64(0)
	for _, a := range r.admitted {
		total += a.cost
	}
	if n, b := r.l.Rate(), r.l.Burst(); total > n && !r.within(total, r.latest-r.first) {
		r.t.Fatalf("%v: %d admitted between %d and %d (burst %d)", r.l, total, r.first, r.latest, b)
	}
	if !r.monotone {
		return
	}
	switch r.l.Algorithm() {
	case limiter.FixedWindow, limiter.SlidingWindow:
		r.checkWindows()
	case limiter.SlidingLog:
		r.checkLog()
	default:
		r.checkBucket()
	}
}
