package decision_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
)

// batchStore is a memory store whose DecideAll is store.LookThenSpend, as
// a Redis Cluster decides keys of different hash tags.
type batchStore struct{ store.Store }

// DecideAll decides by store.LookThenSpend over the store's DecideEach.
func (b batchStore) DecideAll(ctx context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	return store.LookThenSpend(ctx, b.Store, dst, reqs, now)
}

// TestSeveralRulesAllOrNothing decides requests that three rules match, on
// a store that decides all or nothing itself (the memory store) and on one
// that cannot (LookThenSpend): wide (5 a minute per client) and narrow (2
// a minute per address) enforce, audit (1 a minute per client) is a
// shadow. The first two pass (audit's denial of the second stops nothing);
// the next three are refused by narrow and spend nothing of wide, which
// has 3 left, not 0.
func TestSeveralRulesAllOrNothing(t *testing.T) {
	pol, err := policy.Compile(policy.Policy{
		Clients: policy.Clients{List: []policy.Client{{ID: "partner-a", Keys: []string{"key-a"}}}},
		Rules: []policy.Rule{
			{Name: "wide", Key: policy.KeySpec{Kind: policy.KeyClient}, Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 5, Period: time.Minute}},
			{Name: "narrow", Key: policy.KeySpec{Kind: policy.KeyIP}, Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 2, Period: time.Minute}},
			{Name: "audit", Key: policy.KeySpec{Kind: policy.KeyClient}, Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 1, Period: time.Minute}, Mode: policy.Shadow},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, wrap := range map[string]func(store.Store) store.Store{
		"all_or_nothing":  func(s store.Store) store.Store { return s },
		"look_then_spend": func(s store.Store) store.Store { return batchStore{s} },
	} {
		t.Run(name, func(t *testing.T) {
			mem := memory.New(memory.Options{Clock: clock.NewFake(epoch)})
			t.Cleanup(func() { _ = mem.Close() })
			e := engine(t, wrap(mem))
			key := hdr{"X-Api-Key": {"key-a"}}
			for i, want := range []bool{true, true, false, false} {
				if a := decide(t, e, pol, get("/claims/7", key)); a.pass != want {
					t.Fatalf("request %d: %+v, want pass %v", i, a, want)
				}
			}
			v := e.Decide(context.Background(), decision.Settings{Policy: pol}, get("/claims/7", key))
			var wide store.Key
			for _, r := range v.Report.Rules {
				if r.Rule == "wide" {
					wide = r.Key
				}
			}
			pass := v.Pass
			v.Finish(nil)
			if pass || wide == (store.Key{}) {
				t.Fatalf("a fifth request: pass %v, rules %+v", pass, v.Report.Rules)
			}
			d, err := mem.Decide(context.Background(), wide, limiter.MustNew(limiter.FixedWindow, 5, time.Minute, 0), epoch, 0)
			if err != nil || d.Remaining != 3 {
				t.Errorf("wide after two passes and three refusals: %+v, %v; want 3 left", d, err)
			}
		})
	}
}
