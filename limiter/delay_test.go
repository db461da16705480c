package limiter_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// release is a request as it goes on after its hold: when (µs) and cost.
type release struct{ at, cost int64 }

// TestDelayedTrafficConforms makes random bursts of requests under bucket
// limits with a delay, holding each allowed one for its Delay and now and
// then cancelling the last reservation (a caller that left): what goes on
// at the end of the holds must obey the bucket's guarantee, in every
// interval [a, b] at most burst + rate*(b-a)/period, but for the
// microsecond a hold is rounded up to: a turn that falls within a
// microsecond is taken at its end, so an interval that starts with it is
// counted from up to 1µs late (in units: cost*p <= burst*p + (b-a+1)*n).
// And no request is held longer than the delay.
func TestDelayedTrafficConforms(t *testing.T) {
	for _, alg := range []limiter.Algorithm{limiter.TokenBucket, limiter.GCRA, limiter.LeakyBucket} {
		for _, c := range []struct {
			rate   int64
			period time.Duration
			burst  int64
			delay  time.Duration
		}{{10, time.Second, 1, 2 * time.Second}, {3, time.Second, 0, time.Second}, {7, time.Second, 2, 300 * time.Millisecond},
			{100, time.Minute, 5, 10 * time.Second}} {
			l, err := limiter.MustNew(alg, c.rate, c.period, c.burst).WithDelay(c.delay)
			if err != nil {
				t.Fatal(err)
			}
			checkReleases(t, l, rand.New(rand.NewPCG(uint64(alg), uint64(c.rate))))
		}
	}
}

func checkReleases(t *testing.T, l limiter.Limit, rng *rand.Rand) {
	t.Helper()
	var s limiter.State
	var out []release
	last := -1 // index in out of the last reservation, while it may be cancelled
	var lastRes limiter.Reservation
	now := time.UnixMicro(1_700_000_000_000_000)
	for range 400 {
		now = now.Add(time.Duration(rng.Int64N(int64(l.Period())/l.Rate()*2/3 + 1)))
		if last >= 0 && rng.IntN(6) == 0 {
			if !l.Cancel(&s, lastRes, out[last].cost) {
				t.Fatalf("%v: the last reservation %+v was not given back", l, lastRes)
			}
			out, last = slices.Delete(out, last, last+1), -1
			continue
		}
		cost := 1 + rng.Int64N(2)
		d, next := limiter.Decide(l, s, now, cost)
		if d.Delay > l.Delay() {
			t.Fatalf("%v: held %v, longer than the delay", l, d.Delay)
		}
		if !d.Allowed {
			if d.RetryAfter <= 0 {
				t.Fatalf("%v: denied with RetryAfter %v", l, d.RetryAfter)
			}
			continue
		}
		s = next
		out = append(out, release{now.Add(d.Delay).UnixMicro(), cost})
		last, lastRes = -1, d.Reservation
		if d.Delay > 0 {
			last = len(out) - 1
		}
	}
	checkConforms(t, l, out)
}

// TestCancelOnlyTheLast shows why a held request that is not the last
// reservation keeps its cost: given back, a new request would take the
// same turn as a later held one, and two would go on at once.
func TestCancelOnlyTheLast(t *testing.T) {
	for _, alg := range []limiter.Algorithm{limiter.TokenBucket, limiter.GCRA, limiter.LeakyBucket} {
		l, _ := limiter.MustNew(alg, 1, time.Second, 1).WithDelay(5 * time.Second)
		now := time.Unix(1_700_000_000, 0)
		var s limiter.State
		var ds []limiter.Decision
		for range 3 {
			var d limiter.Decision
			d, s = limiter.Decide(l, s, now, 1)
			ds = append(ds, d)
		}
		if ds[0].Delay != 0 || ds[1].Delay != time.Second || ds[2].Delay != 2*time.Second {
			t.Fatalf("%v: delays %v %v %v, want 0s 1s 2s", alg, ds[0].Delay, ds[1].Delay, ds[2].Delay)
		}
		before := s
		if l.Cancel(&s, ds[1].Reservation, 1) || s.A != before.A || s.B != before.B {
			t.Errorf("%v: the middle reservation was given back (state %+v -> %+v)", alg, before, s)
		}
		if l.Cancel(&s, ds[0].Reservation, 1) {
			t.Errorf("%v: a request that was not held was given back", alg)
		}
		if !l.Cancel(&s, ds[2].Reservation, 1) {
			t.Fatalf("%v: the last reservation was not given back", alg)
		}
		// Now the middle one is the last: it can go too, and a new
		// request then takes its turn.
		if !l.Cancel(&s, ds[1].Reservation, 1) {
			t.Fatalf("%v: the middle reservation, now the last, was not given back", alg)
		}
		if d, _ := limiter.Decide(l, s, now, 1); d.Delay != time.Second {
			t.Errorf("%v: after both cancels a new request is held %v, want 1s", alg, d.Delay)
		}
		var other limiter.Limit = limiter.MustNew(alg, 2, time.Second, 1)
		if other.Cancel(&s, ds[2].Reservation, 1) {
			t.Errorf("%v: a cancel under another limit gave back", alg)
		}
	}
}

func TestWithDelayRefuses(t *testing.T) {
	for _, c := range []struct {
		l     limiter.Limit
		delay time.Duration
		want  string
	}{
		{limiter.MustNew(limiter.SlidingWindow, 10, time.Second, 0), time.Second, "sliding_window takes no delay"},
		{limiter.MustNew(limiter.FixedWindow, 10, time.Second, 0), time.Second, "fixed_window takes no delay"},
		{limiter.MustNew(limiter.SlidingLog, 10, time.Second, 0), time.Second, "sliding_log takes no delay"},
		{limiter.MustNew(limiter.GCRA, 10, time.Second, 0), -time.Second, "out of range (0 to 1h0m0s)"},
		{limiter.MustNew(limiter.GCRA, 10, time.Second, 0), 2 * time.Hour, "out of range (0 to 1h0m0s)"},
		{limiter.MustNew(limiter.GCRA, 10, time.Second, 0), time.Nanosecond, "not a whole number of microseconds"},
		{limiter.MustNew(limiter.GCRA, 999_999_999, time.Millisecond, 0), time.Hour, "cannot be counted exactly"},
	} {
		_, err := c.l.WithDelay(c.delay)
		var le *limiter.LimitError
		if !errors.As(err, &le) || le.Field != limiter.FieldDelay || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v WithDelay(%v) = %v, want a delay error containing %q", c.l, c.delay, err, c.want)
		}
	}
	l, err := limiter.MustNew(limiter.LeakyBucket, 10, time.Second, 0).WithDelay(2 * time.Second)
	if err != nil || l.Delay() != 2*time.Second || l.String() != "leaky_bucket 10/1s delay 2s" {
		t.Errorf("WithDelay(2s) = %v (%v), %v", l, l.Delay(), err)
	}
	if z, err := l.WithDelay(0); err != nil || z.Delay() != 0 || !z.Same(&l) {
		t.Errorf("WithDelay(0) = %v, %v", z, err)
	}
}
