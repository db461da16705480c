package redis

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// delayLimits returns caseLimits for alg (bucket algorithms), each without
// a delay and with delays of a few emission intervals and of a period (at
// most limiter.MaxDelay; a delay the limit cannot count exactly is left
// out).
func delayLimits(t *testing.T, alg limiter.Algorithm) []limiter.Limit {
	var out []limiter.Limit
	for _, l := range caseLimits(t, alg) {
		p, n := l.Interval()
		out = append(out, l)
		for _, d := range []time.Duration{time.Duration(3*max(p/n, 1)) * time.Microsecond, min(l.Period(), limiter.MaxDelay)} {
			if dl, err := l.WithDelay(d); err == nil {
				out = append(out, dl)
			}
		}
	}
	return out
}

// TestDifferentialDelay replays random steps through limiter and the Redis
// store under limits with a delay (requests held for their turn), as
// single requests, batches and all-or-nothing calls, with the limit and
// its delay changing now and then, and cancels of held requests' reservations,
// the last one or an earlier one: every decision and every cancel must be
// identical.
func TestDifferentialDelay(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	for i, alg := range []limiter.Algorithm{limiter.TokenBucket, limiter.GCRA, limiter.LeakyBucket} {
		lims := delayLimits(t, alg)
		t.Run(alg.String(), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(*diffSeed, 5000+uint64(i)))
			replayDelay(t, s, "diffdelay:"+alg.String(), lims, rng, 4**diffSteps)
		})
	}
}

// replayDelay is replayChanging for limits with a delay, with cancels and
// settlements of any reservation (held or not, even one cancelled or
// settled before: Go and Lua must agree on what is void).
func replayDelay(t *testing.T, s *Store, key string, lims []limiter.Limit, rng *rand.Rand, steps int) {
	t.Helper()
	var m model
	var history strings.Builder
	var holds []reserved // held for their turn, for cancelling
	var spent []reserved // settled at any actual cost, held or not, cancelled or not
	now, l := epoch.UnixMicro(), lims[0]
	for step := range steps {
		if rng.IntN(8) == 0 {
			l = lims[rng.IntN(len(lims))]
		}
		if len(holds) > 0 && rng.IntN(3) == 0 {
			i := len(holds) - 1 // mostly the last
			if rng.IntN(3) == 0 {
				i = rng.IntN(len(holds))
			}
			h := holds[i]
			want := m.limit.Same(&l) && l.Cancel(&m.state, h.r, h.cost)
			got, err := s.Cancel(context.Background(), store.RawKey(key), l, h.r, h.cost)
			fmt.Fprintf(&history, "  step %d: cancel %+v cost %d -> %v\n", step, h.r, h.cost, want)
			if err != nil || got != want {
				t.Fatalf("step %d: cancel %+v cost %d under %v: redis %v (%v), go %v\nsteps so far (go):\n%s",
					step, h.r, h.cost, l, got, err, want, history.String())
			}
			continue
		}
		now = nextTimeUnder(rng, now, l)
		if len(spent) > 0 && rng.IntN(4) == 0 {
			settleBoth(t, s, &m, key, l, time.UnixMicro(now), spent[rng.IntN(len(spent))], rng, fmt.Sprintf("step %d", step), &history)
			continue
		}
		costs := make([]int64, 1+rng.IntN(3))
		for j := range costs {
			costs[j] = nextCost(rng, l.Burst())
		}
		at := time.UnixMicro(now)
		got := decideSomehow(t, s, rng, key, l, at, costs)
		for j, cost := range costs {
			want := m.decide(l, at, cost)
			fmt.Fprintf(&history, "  step %d.%d: %v now %d cost %d -> %+v\n", step, j, l, now, cost, want)
			if got[j].err != nil || got[j].d != want {
				t.Fatalf("step %d.%d under %v (now %d µs, cost %d):\n redis %+v (%v)\n go    %+v\nsteps so far (go):\n%s",
					step, j, l, now, cost, got[j].d, got[j].err, want, history.String())
			}
			if want.Delay > 0 {
				holds = append(holds, reserved{want.Reservation, cost})
			}
			if want.Reservation.At > 0 {
				spent = append(spent, reserved{want.Reservation, cost})
			}
		}
	}
}

// decideSomehow decides costs on key one by one, as a batch, or (a single
// cost) with the all-or-nothing script.
func decideSomehow(t *testing.T, s *Store, rng *rand.Rand, key string, l limiter.Limit, at time.Time, costs []int64) []outcome {
	switch {
	case len(costs) > 1:
		return decideBatchNow(s, key, l, at, costs)
	case rng.IntN(2) == 0 && costs[0] >= 0:
		res, err := s.DecideAll(context.Background(), nil, []store.Request{{Key: store.RawKey(key), Limit: l, Cost: costs[0]}}, at)
		if err != nil {
			return []outcome{{err: err}}
		}
		return []outcome{{d: res[0].Decision, err: res[0].Err}}
	}
	return []outcome{{d: decide(t, s, store.RawKey(key), l, at, costs[0])}}
}

// TestDecideAllHoldsOrSpendsNothing: decided all or nothing with another
// rule, a rule with a delay that would hold the request spends nothing
// when the other rule refuses (its next request is held as long as this
// one would have been), and holds it when the other allows.
func TestDecideAllHoldsOrSpendsNothing(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	ctx := context.Background()
	queue, err := mustLimit(t, limiter.LeakyBucket, 10, time.Second, 1).WithDelay(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	window := mustLimit(t, limiter.FixedWindow, 1, time.Minute, 0)
	qk, wk := store.GroupKey("c", "queue"), store.GroupKey("c", "window")
	at := epoch
	if d := decide(t, s, qk, queue, at, 1); !d.Allowed || d.Delay != 0 {
		t.Fatalf("first: %+v", d)
	}
	both := []store.Request{{Key: qk, Limit: queue, Cost: 1}, {Key: wk, Limit: window, Cost: 1}}
	res, err := s.DecideAll(ctx, nil, both, at)
	if err != nil || res[0].Decision.Delay != 100*time.Millisecond || !res[1].Decision.Allowed {
		t.Fatalf("both allow: %+v, %v", res, err)
	}
	res, err = s.DecideAll(ctx, nil, both, at) // the window rule is full now
	if err != nil || res[1].Decision.Allowed || res[0].Decision.Delay != 0 || !res[0].Decision.Allowed {
		t.Fatalf("the window refuses: %+v, %v; want the queue rule's look", res, err)
	}
	if d := decide(t, s, qk, queue, at, 1); d.Delay != 200*time.Millisecond {
		t.Errorf("after a refused request the queue holds the next for %v, want 200ms (nothing spent)", d.Delay)
	}
}
