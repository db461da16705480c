package redisstore

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// decideAllModel is store.AllOrNothing's DecideAll in Go, on models: the
// reference the multi-rule script must match.
func decideAllModel(models []*model, reqs []store.Request, now time.Time) []limiter.Decision {
	ds := make([]limiter.Decision, len(reqs))
	rebased := make([]bool, len(reqs))
	pass := true
	for i, r := range reqs {
		rebased[i] = models[i].rebase(r.Limit, now) // a rebased state is kept whatever the outcome
		ds[i], _ = limiter.Decide(r.Limit, models[i].copyState(), now, r.Cost)
		if !ds[i].Allowed && !r.Shadow {
			pass = false
		}
	}
	for i, r := range reqs {
		var next limiter.State
		switch {
		case pass:
			ds[i], next = limiter.Decide(r.Limit, models[i].copyState(), now, r.Cost)
			models[i].keep(ds[i], next, rebased[i])
		case ds[i].Allowed: // nothing spent: a look, whose state is kept if rebased
			ds[i], next = limiter.Decide(r.Limit, models[i].copyState(), now, 0)
			if rebased[i] {
				models[i].keep(ds[i], next, true)
			}
		default:
			models[i].keep(ds[i], models[i].state, rebased[i])
		}
	}
	return ds
}

// TestDecideAllDifferential replays random requests over two to four
// rules (random algorithms, limits changed now and then, costs, shadow
// rules)
// through DecideAll and through its Go model: every decision must be
// identical, and so the states, which the next steps read.
func TestDecideAllDifferential(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	algs := limiter.Algorithms
	lims := []struct {
		rate   int64
		period time.Duration
		burst  int64
	}{{3, time.Second, 0}, {5, 10 * time.Millisecond, 2}, {1, time.Minute, 0}, {100, time.Minute, 10}, {7, 3 * time.Millisecond, 0}}
	for scenario := range 40 {
		t.Run(fmt.Sprint(scenario), func(t *testing.T) {
			t.Parallel()
			rng := rand.New(rand.NewPCG(*diffSeed, 2000+uint64(scenario)))
			rules := make([]store.Request, 2+rng.IntN(3))
			models := make([]*model, len(rules))
			for i := range rules {
				l, alg := lims[rng.IntN(len(lims))], algs[rng.IntN(len(algs))]
				if !alg.HasBurst() {
					l.burst = 0
				}
				rules[i] = store.Request{
					Key:    fmt.Sprintf("multi:%d:%d", scenario, i),
					Limit:  mustLimit(t, alg, l.rate, l.period, l.burst),
					Shadow: rng.IntN(4) == 0,
				}
				models[i] = &model{}
			}
			var history strings.Builder
			now := epoch.UnixMicro()
			for step := range *diffSteps {
				now = nextTime(rng, now, 1_000_000, 1000)
				if rng.IntN(8) == 0 { // a reload changes one rule's limit
					r, l := &rules[rng.IntN(len(rules))], lims[rng.IntN(len(lims))]
					if !r.Limit.Algorithm().HasBurst() {
						l.burst = 0
					}
					r.Limit = mustLimit(t, r.Limit.Algorithm(), l.rate, l.period, l.burst)
				}
				reqs := append([]store.Request(nil), rules...)
				for i := range reqs {
					reqs[i].Cost = nextCost(rng, reqs[i].Limit.Burst())
				}
				at := time.UnixMicro(now)
				want := decideAllModel(models, reqs, at)
				got, err := s.DecideAll(context.Background(), reqs, at)
				if err != nil {
					t.Fatalf("step %d: %v", step, err)
				}
				fmt.Fprintf(&history, "  step %d: now %d:", step, now)
				for i, r := range reqs {
					fmt.Fprintf(&history, " [%v cost %d shadow %v -> %+v]", r.Limit, r.Cost, r.Shadow, want[i])
				}
				history.WriteByte('\n')
				for i := range reqs {
					if got[i].Err != nil || got[i].Decision != want[i] {
						t.Fatalf("step %d, rule %d:\n redis %+v (%v)\n go    %+v\nsteps so far (go):\n%s",
							step, i, got[i].Decision, got[i].Err, want[i], history.String())
					}
				}
			}
		})
	}
}

// TestDecideAllOneCall checks what DecideAll is for: a request's rules
// cost one script call whether they pass or not, and a rejected request
// spends nothing of the rules that had room.
func TestDecideAllOneCall(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	wide := mustLimit(t, limiter.GCRA, 10, time.Minute, 0)
	narrow := mustLimit(t, limiter.FixedWindow, 2, time.Minute, 0)
	reqs := []store.Request{{Key: "wide", Limit: wide, Cost: 1}, {Key: "narrow", Limit: narrow, Cost: 1}}
	before := redistest.ScriptCalls(t, srv.Addr)
	wideLeft := []int64{9, 8, 8, 8} // the third and fourth spend nothing: narrow denies
	for i := range 4 {
		res, err := s.DecideAll(context.Background(), reqs, epoch)
		if err != nil {
			t.Fatal(err)
		}
		if pass := i < 2; !res[0].Decision.Allowed || res[1].Decision.Allowed != pass || res[0].Decision.Remaining != wideLeft[i] {
			t.Fatalf("request %d: %+v, want wide allowed with %d left, narrow allowed=%v", i, res, wideLeft[i], pass)
		}
	}
	if calls := redistest.ScriptCalls(t, srv.Addr) - before; calls != 4 {
		t.Errorf("4 requests of 2 rules took %d script calls, want 4", calls)
	}
}

// TestDecideAllNotAtomic lists what DecideAll refuses with
// store.ErrNotAtomic, deciding nothing.
func TestDecideAllNotAtomic(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.GCRA, 10, time.Minute, 0)
	for name, reqs := range map[string][]store.Request{
		"zero limit": {{Key: "a", Limit: l, Cost: 1}, {Key: "b", Cost: 1}},
		"negative":   {{Key: "a", Limit: l, Cost: 1}, {Key: "b", Limit: l, Cost: -1}},
		"same key":   {{Key: "a", Limit: l, Cost: 1}, {Key: "a", Limit: l, Cost: 1}},
	} {
		if _, err := s.DecideAll(context.Background(), reqs, epoch); !errors.Is(err, store.ErrNotAtomic) {
			t.Errorf("%s: error %v, want store.ErrNotAtomic", name, err)
		}
	}
	if d := decide(t, s, "a", l, epoch, 0); d.Remaining != 10 {
		t.Errorf("a refused DecideAll spent: %+v", d)
	}
	c := redistest.StartCluster(t)
	cs := open(t, c.Addrs, true)
	if _, err := cs.DecideAll(context.Background(), []store.Request{{Key: "a", Limit: l, Cost: 1}, {Key: "b", Limit: l, Cost: 1}}, epoch); !errors.Is(err, store.ErrNotAtomic) {
		t.Errorf("on a cluster, keys of no group: error %v, want store.ErrNotAtomic", err)
	}
	other := []store.Request{{Key: store.GroupKey("g1", "a"), Limit: l, Cost: 1}, {Key: store.GroupKey("g2", "b"), Limit: l, Cost: 1}}
	if _, err := cs.DecideAll(context.Background(), other, epoch); !errors.Is(err, store.ErrNotAtomic) {
		t.Errorf("on a cluster, keys of two groups: error %v, want store.ErrNotAtomic", err)
	}
	// One group shares a hash slot: decided in one call.
	one := []store.Request{{Key: store.GroupKey("g", "a"), Limit: l, Cost: 1}, {Key: store.GroupKey("g", "b"), Limit: l, Cost: 1}}
	for i := range 2 {
		res, err := cs.DecideAll(context.Background(), one, epoch)
		if err != nil || res[0].Decision.Remaining != int64(9-i) || res[1].Decision.Remaining != int64(9-i) {
			t.Fatalf("on a cluster, keys of one group, request %d: %+v, %v", i, res, err)
		}
	}
}
