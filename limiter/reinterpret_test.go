package limiter_test

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// FuzzReinterpret spends on a key under one limit, changes its limit to
// another of the same algorithm and checks what Reinterpret promises: no
// panic, a valid decision under the new limit (a look, cost 0, allowed
// even when the key has spent more than the new limit), and nothing spent given
// back: what a look (cost 0) under the new limit finds remaining is at
// most the new burst less what the old limit had counted as spent (but for
// sliding_log under a shorter period, whose older entries then expire).
// Reinterpreting under the same limit changes nothing.
func FuzzReinterpret(f *testing.F) {
	jan := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	spend := []byte{0, 0, 3, 3, 5, 2, 0, 0, 200}
	for _, alg := range limiter.Algorithms {
		f.Add(uint8(alg), int64(10), int64(1_000_000), int64(0), int64(3), int64(1_000_000), int64(0), jan, spend)
		f.Add(uint8(alg), int64(3), int64(1_000_000), int64(0), int64(10), int64(7_000_000), int64(0), jan+1, spend)
		f.Add(uint8(alg), int64(5), int64(60_000_000), int64(0), int64(5), int64(10_000_000), int64(2), jan+59_000_000, spend)
		f.Add(uint8(alg), int64(1), int64(31_622_400_000_000), int64(284), int64(1e9), int64(1000), int64(1e9), jan, spend)
	}
	f.Fuzz(func(t *testing.T, alg uint8, rate1, period1, burst1, rate2, period2, burst2, start int64, b []byte) {
		from, err1 := limiter.New(limiter.Algorithm(alg), rate1, time.Duration(period1)*time.Microsecond, burst1)
		to, err2 := limiter.New(limiter.Algorithm(alg), rate2, time.Duration(period2)*time.Microsecond, burst2)
		if err1 != nil || err2 != nil {
			t.Skip()
		}
		var s limiter.State
		now := start
		for _, st := range decodeSteps(b, from.Burst()) {
			now = addSat(now, st.delta)
			if d, next := limiter.Decide(from, clone(s), time.UnixMicro(now), st.cost); d.Allowed {
				s = next
			}
		}
		at := time.UnixMicro(now)
		if same := limiter.Reinterpret(from, from, clone(s), at); !sameState(same, s) {
			t.Fatalf("Reinterpret under the same limit changed %+v to %+v", s, same)
		}
		before, _ := limiter.Decide(from, clone(s), at, 0)
		after, _ := limiter.Decide(to, limiter.Reinterpret(from, to, clone(s), at), at, 0)
		if !after.Allowed || after.Limit != to.Burst() || after.Remaining < 0 || after.Remaining > after.Limit {
			t.Fatalf("%v -> %v: look %+v: want it allowed, Limit %d, 0 <= Remaining <= Limit", from, to, after, to.Burst())
		}
		spent := from.Burst() - before.Remaining
		if from.Algorithm() == limiter.SlidingLog && to.Period() < from.Period() {
			return
		}
		if want := max(to.Burst()-spent, 0); after.Remaining > want {
			t.Fatalf("%v -> %v at %d: %d spent of %d, but %d remaining of %d (at most %d): a change gave back what was spent",
				from, to, now, spent, from.Burst(), after.Remaining, to.Burst(), want)
		}
	})
}

// FuzzReinterpretThenDecide spends on a key under one limit, reinterprets
// its state under another of the same algorithm and goes on deciding
// under the new limit, time going only forward: every decision keeps the
// promises of Decide (Remaining exact, RetryAfter and Refill neither late
// nor early, a look always allowed) even from a state the new limit alone
// could not have reached, such as a count above its rate.
func FuzzReinterpretThenDecide(f *testing.F) {
	jan := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	spend, later := []byte{0, 0, 3, 3, 5, 2, 0, 0, 200}, []byte{0, 0, 0, 1, 0, 1, 3, 7, 2, 5, 3, 1}
	for _, alg := range limiter.Algorithms {
		f.Add(uint8(alg), int64(10), int64(1_000_000), int64(0), int64(3), int64(1_000_000), int64(0), jan, spend, later)
		f.Add(uint8(alg), int64(1000), int64(1_000_000), int64(0), int64(1), int64(7_000_000), int64(0), jan+1, spend, later)
		f.Add(uint8(alg), int64(1_000_000_000), int64(1000), int64(0), int64(1), int64(31_622_400_000_000), int64(0), jan, spend, later)
	}
	f.Fuzz(func(t *testing.T, alg uint8, rate1, period1, burst1, rate2, period2, burst2, start int64, b, b2 []byte) {
		from, err1 := limiter.New(limiter.Algorithm(alg), rate1, time.Duration(period1)*time.Microsecond, burst1)
		to, err2 := limiter.New(limiter.Algorithm(alg), rate2, time.Duration(period2)*time.Microsecond, burst2)
		if err1 != nil || err2 != nil {
			t.Skip()
		}
		var s limiter.State
		now, latest := start, clamp(start)
		for _, st := range decodeSteps(b, from.Burst()) {
			now = addSat(now, st.delta)
			latest = max(latest, clamp(now))
			if d, next := limiter.Decide(from, clone(s), time.UnixMicro(now), st.cost); d.Allowed {
				s = next
			}
		}
		r := newRun(t, to)
		now = max(now, latest)
		r.s, r.latest = limiter.Reinterpret(from, to, clone(s), time.UnixMicro(now)), latest
		for _, st := range decodeSteps(b2, to.Burst()) {
			now = max(addSat(now, st.delta), r.latest)
			at := clamp(now)
			d, next := limiter.Decide(to, clone(r.s), time.UnixMicro(now), st.cost)
			r.checkDecision(d, st.cost)
			if st.cost >= 0 {
				r.checkRemaining(d, next, now)
				r.checkRetryAfter(d, next, at, st.cost)
				r.checkRefill(d, next, at)
			}
			r.s, r.latest = next, at
		}
	})
}
