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

// decideAllModel is store.Store's DecideAll in Go, on models: the
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
					Key:    store.RawKey(fmt.Sprintf("multi:%d:%d", scenario, i)),
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
				got, err := s.DecideAll(context.Background(), nil, reqs, at)
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
	reqs := []store.Request{{Key: store.RawKey("wide"), Limit: wide, Cost: 1}, {Key: store.RawKey("narrow"), Limit: narrow, Cost: 1}}
	before := redistest.ScriptCalls(t, srv.Addr)
	wideLeft := []int64{9, 8, 8, 8} // the third and fourth spend nothing: narrow denies
	for i := range 4 {
		res, err := s.DecideAll(context.Background(), nil, reqs, epoch)
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

// TestDecideAllBeyondTheScript checks the requests the multi-rule script
// does not take. A zero Limit or a negative cost that enforces is denied
// without Redis and the others looked at, spending nothing, in one script
// call; a key asked twice, and on a Cluster keys of no group or of two
// groups, are decided look then spend: each spends when all have room.
func TestDecideAllBeyondTheScript(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	l := mustLimit(t, limiter.GCRA, 10, time.Minute, 0)
	for name, reqs := range map[string][]store.Request{
		"zero limit": {{Key: store.RawKey("a"), Limit: l, Cost: 1}, {Key: store.RawKey("b"), Cost: 1}},
		"negative":   {{Key: store.RawKey("a"), Limit: l, Cost: 1}, {Key: store.RawKey("b"), Limit: l, Cost: -1}},
	} {
		before := redistest.ScriptCalls(t, srv.Addr)
		res, err := s.DecideAll(context.Background(), nil, reqs, epoch)
		if err != nil || len(res) != 2 || !res[0].Decision.Allowed || res[0].Decision.Remaining != 10 ||
			res[1].Decision.Allowed || res[1].Decision.RetryAfter != limiter.Never {
			t.Errorf("%s: %+v, %v; want a's look (10 left), b denied for ever", name, res, err)
		}
		if calls := redistest.ScriptCalls(t, srv.Addr) - before; calls != 1 {
			t.Errorf("%s: %d script calls, want 1 (a's look)", name, calls)
		}
	}
	if d := decide(t, s, store.RawKey("a"), l, epoch, 0); d.Remaining != 10 {
		t.Errorf("a refused DecideAll spent: %+v", d)
	}
	shadow := []store.Request{{Key: store.RawKey("a"), Limit: l, Cost: 1}, {Key: store.RawKey("b"), Cost: 1, Shadow: true}}
	if res, err := s.DecideAll(context.Background(), nil, shadow, epoch); err != nil || res[0].Decision.Remaining != 9 || res[1].Decision.Allowed {
		t.Errorf("a shadow zero Limit: %+v, %v; want a spent (9 left), b denied", res, err)
	}
	twice := []store.Request{{Key: store.RawKey("c"), Limit: l, Cost: 1}, {Key: store.RawKey("c"), Limit: l, Cost: 1}}
	if res, err := s.DecideAll(context.Background(), nil, twice, epoch); err != nil || res[0].Decision.Remaining != 9 || res[1].Decision.Remaining != 8 {
		t.Errorf("a key asked twice: %+v, %v; want 9 then 8 left", res, err)
	}
	c := redistest.StartCluster(t)
	cs := open(t, c.Addrs, true)
	for name, reqs := range map[string][]store.Request{
		"keys of no group":   {{Key: store.RawKey("a"), Limit: l, Cost: 1}, {Key: store.RawKey("b"), Limit: l, Cost: 1}},
		"keys of two groups": {{Key: store.GroupKey("g1", "a"), Limit: l, Cost: 1}, {Key: store.GroupKey("g2", "b"), Limit: l, Cost: 1}},
		// One group shares a hash slot: decided in one call.
		"keys of one group": {{Key: store.GroupKey("g", "a"), Limit: l, Cost: 1}, {Key: store.GroupKey("g", "b"), Limit: l, Cost: 1}},
	} {
		for i := range 2 {
			res, err := cs.DecideAll(context.Background(), nil, reqs, epoch)
			if err != nil || res[0].Decision.Remaining != int64(9-i) || res[1].Decision.Remaining != int64(9-i) {
				t.Fatalf("on a cluster, %s, request %d: %+v, %v", name, i, res, err)
			}
		}
	}
	narrow := mustLimit(t, limiter.FixedWindow, 1, time.Minute, 0)
	spread := []store.Request{{Key: store.GroupKey("g3", "wide"), Limit: l, Cost: 1}, {Key: store.GroupKey("g4", "narrow"), Limit: narrow, Cost: 1}}
	for i, left := range []int64{9, 9} { // the second spends nothing: narrow is full
		res, err := cs.DecideAll(context.Background(), nil, spread, epoch)
		if err != nil || !res[0].Decision.Allowed || res[0].Decision.Remaining != left || res[1].Decision.Allowed != (i == 0) {
			t.Fatalf("on a cluster, two groups, one full, request %d: %+v, %v", i, res, err)
		}
	}
}
