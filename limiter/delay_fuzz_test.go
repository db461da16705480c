package limiter_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// FuzzDelayInvariants drives a bucket limit with a delay through random
// steps (time moving on, costs 0 to 3, cancels of the last held request)
// and checks every decision: no hold longer than the delay, Remaining
// within [0, burst], a denied request admitted exactly at its RetryAfter
// (not a microsecond before), a cancel leaving the key as if the request
// had never come, and what passes on at the end of the holds within the
// bucket's guarantee (see TestDelayedTrafficConforms).
func FuzzDelayInvariants(f *testing.F) {
	f.Add(uint8(2), uint16(10), uint8(1), uint16(2000), []byte{0, 1, 0, 1, 0, 1, 0, 255, 0, 1, 50, 2, 0, 3})
	f.Add(uint8(0), uint16(7), uint8(2), uint16(300), []byte{1, 1, 1, 2, 0, 3, 0, 255, 9, 1})
	f.Add(uint8(1), uint16(3), uint8(0), uint16(1000), []byte{0, 3, 0, 1, 0, 2, 0, 255, 0, 255, 200, 1})
	f.Fuzz(func(t *testing.T, a uint8, rate uint16, burst uint8, delayMs uint16, steps []byte) {
		alg := []limiter.Algorithm{limiter.TokenBucket, limiter.GCRA, limiter.LeakyBucket}[a%3]
		l, err := limiter.New(alg, int64(rate%1000)+1, time.Second, int64(burst%20))
		if err != nil {
			t.Skip()
		}
		if l, err = l.WithDelay(time.Duration(delayMs%5000) * time.Millisecond); err != nil {
			t.Fatalf("WithDelay: %v", err)
		}
		runDelaySteps(t, l, steps)
	})
}

func runDelaySteps(t *testing.T, l limiter.Limit, steps []byte) {
	var s limiter.State
	var out []release
	type heldReq struct {
		r      limiter.Reservation
		cost   int64
		before limiter.State
		index  int
	}
	var last *heldReq // the last reservation, while it is a held one
	now := time.UnixMicro(1_700_000_000_000_000)
	for i := 0; i+1 < len(steps); i += 2 {
		now = now.Add(time.Duration(steps[i]) * time.Duration(steps[i]) * 37 * time.Microsecond)
		if steps[i+1] == 255 {
			if last == nil {
				continue
			}
			if !l.Cancel(&s, last.r, last.cost) {
				t.Fatalf("%v: the last reservation %+v was not given back", l, last.r)
			}
			got, _ := limiter.Decide(l, s, now, 0)
			want, _ := limiter.Decide(l, last.before, now, 0)
			if got != want {
				t.Fatalf("%v: after a cancel a look sees %+v, as if it never came %+v", l, got, want)
			}
			out, last = slices.Delete(out, last.index, last.index+1), nil
			continue
		}
		cost := int64(steps[i+1] % 4)
		d, next := limiter.Decide(l, s, now, cost)
		checkDelayDecision(t, l, s, now, cost, d)
		if !d.Allowed || cost == 0 {
			continue
		}
		out = append(out, release{now.Add(d.Delay).UnixMicro(), cost})
		last = nil
		if d.Delay > 0 {
			last = &heldReq{r: d.Reservation, cost: cost, before: s, index: len(out) - 1}
		}
		s = next
	}
	checkConforms(t, l, out)
}

func checkDelayDecision(t *testing.T, l limiter.Limit, s limiter.State, now time.Time, cost int64, d limiter.Decision) {
	t.Helper()
	if d.Delay < 0 || d.Delay > l.Delay() || d.Remaining < 0 || d.Remaining > l.Burst() || d.Delay > 0 && !d.Allowed {
		t.Fatalf("%v cost %d: %+v", l, cost, d)
	}
	if d.Allowed || d.RetryAfter == limiter.Never {
		return
	}
	if at, _ := limiter.Decide(l, s, now.Add(d.RetryAfter), cost); !at.Allowed {
		t.Fatalf("%v cost %d: denied with RetryAfter %v, and denied then too: %+v", l, cost, d.RetryAfter, at)
	}
	if d.RetryAfter > time.Microsecond {
		if before, _ := limiter.Decide(l, s, now.Add(d.RetryAfter-time.Microsecond), cost); before.Allowed {
			t.Fatalf("%v cost %d: RetryAfter %v, but allowed 1µs earlier", l, cost, d.RetryAfter)
		}
	}
}

// checkConforms checks what passes on at the end of the holds against the
// bucket's guarantee, but for the microsecond a hold is rounded up to.
func checkConforms(t *testing.T, l limiter.Limit, out []release) {
	t.Helper()
	p, n := l.Interval()
	slices.SortFunc(out, func(a, b release) int { return int(a.at - b.at) })
	for i := range out {
		var sum int64
		for j := i; j < len(out); j++ {
			sum += out[j].cost
			if sum*p > l.Burst()*p+(out[j].at-out[i].at+1)*n {
				t.Fatalf("%v: %d units go on between %d and %d µs, more than the bucket allows", l, sum, out[i].at, out[j].at)
			}
		}
	}
}
