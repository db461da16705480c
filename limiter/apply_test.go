package limiter_test

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// TestApplyIntoMatchesDecide runs one key through allowed, denied,
// zero-cost and negative-cost requests and a clock going back, for every
// algorithm and the zero Limit: ApplyInto must leave the state Decide
// returns and overwrite every field of the decision with Decide's.
func TestApplyIntoMatchesDecide(t *testing.T) {
	steps := []struct{ at, cost int64 }{ // µs after start
		{0, 1}, {0, 2}, {1, 0}, {10, 5}, {20, -1}, {5, 1}, {400_000, 1},
		{400_000, 4}, {1_200_000, 0}, {1_200_001, 3}, {3_000_000, 0},
	}
	limits := []limiter.Limit{{}}
	for _, alg := range limiter.Algorithms {
		limits = append(limits, limiter.MustNew(alg, 4, time.Second, 0))
	}
	start := time.Unix(1_800_000_000, 0)
	for _, l := range limits {
		var want, got limiter.State
		for i, st := range steps {
			now := start.Add(time.Duration(st.at) * time.Microsecond)
			wantD, next := limiter.Decide(l, clone(want), now, st.cost)
			d := limiter.Decision{Allowed: !wantD.Allowed, Limit: -1, Remaining: -1, RetryAfter: -1, Reset: -1}
			l.ApplyInto(&got, now, st.cost, &d)
			if d != wantD {
				t.Fatalf("%v step %d: ApplyInto decided %+v, Decide %+v", l, i, d, wantD)
			}
			if !sameState(got, next) {
				t.Fatalf("%v step %d: ApplyInto left %+v, Decide %+v", l, i, got, next)
			}
			want = next
		}
	}
}

// TestApplyMicrosMatchesApplyInto runs the steps of TestApplyIntoMatchesDecide,
// and times before 1970 and past 2112, through ApplyMicros at t and
// ApplyInto at a time that UnixMicro turns into t or clamps as ApplyMicros
// clamps t: they must decide alike and leave the same state.
func TestApplyMicrosMatchesApplyInto(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	steps := []struct {
		us, cost int64
		now      time.Time
	}{
		{0, 1, time.Unix(0, 0)}, {-5, 1, time.Unix(-1, 0)}, {1 << 60, 1, time.Unix(1<<40, 0)},
		{limiter.UnixMicro(start), 1, start}, {limiter.UnixMicro(start), 2, start},
		{limiter.UnixMicro(start) + 10, 5, start.Add(10 * time.Microsecond)},
		{limiter.UnixMicro(start) + 5, 1, start.Add(5 * time.Microsecond)},
		{limiter.UnixMicro(start) + 1_200_001, 3, start.Add(1_200_001 * time.Microsecond)},
	}
	limits := []limiter.Limit{{}}
	for _, alg := range limiter.Algorithms {
		limits = append(limits, limiter.MustNew(alg, 4, time.Second, 0))
	}
	for _, l := range limits {
		var want, got limiter.State
		for i, st := range steps {
			var wantD, d limiter.Decision
			l.ApplyInto(&want, st.now, st.cost, &wantD)
			l.ApplyMicros(&got, st.us, st.cost, &d)
			if d != wantD || !sameState(got, want) {
				t.Fatalf("%v step %d: ApplyMicros decided %+v leaving %+v, ApplyInto %+v leaving %+v", l, i, d, got, wantD, want)
			}
		}
	}
}
