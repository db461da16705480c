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
