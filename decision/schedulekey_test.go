package decision

import (
	"net/netip"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// A schedule entry changes limits, never the store key a request counts
// on: for every key kind, and for callers on the rule's rate, on a plan
// whose only override of the rule is scheduled, and on a plan with its
// own override, the key is the same in and out of the entries.
func TestScheduleKeepsStoreKeys(t *testing.T) {
	sat := []time.Weekday{time.Saturday}
	half := policy.Schedule{{Days: sat, Rate: &policy.Rate{N: 5, Period: time.Minute}, Burst: 3}}
	rule := func(name string, key policy.KeySpec) policy.Rule {
		return policy.Rule{Name: name, Key: key, Algorithm: limiter.GCRA, Rate: policy.Rate{N: 10, Period: time.Minute}, Burst: 10, Schedule: half}
	}
	pol, err := policy.Compile(policy.Policy{
		Clients: policy.Clients{Unknown: policy.UnknownAnonymous, List: []policy.Client{
			{ID: "rule-rate", Keys: []string{"k1"}},
			{ID: "scheduled", Keys: []string{"k2"}, Plan: "weekend"},
			{ID: "own", Keys: []string{"k3"}, Plan: "large"},
		}},
		Plans: map[string]policy.Plan{
			"weekend": {Schedule: []policy.PlanScheduleEntry{{Days: sat, Limits: map[string]policy.Rate{
				"by-client": {N: 50, Period: time.Minute}, "by-ip": {N: 50, Period: time.Minute},
				"by-header": {N: 50, Period: time.Minute}, "all": {N: 50, Period: time.Minute}}}}},
			"large": {Limits: map[string]policy.Rate{"by-ip": {N: 100, Period: time.Minute}},
				Schedule: []policy.PlanScheduleEntry{{Days: sat, Limits: map[string]policy.Rate{"by-ip": {N: 200, Period: time.Minute}}}}},
		},
		Rules: []policy.Rule{
			rule("by-client", policy.KeySpec{Kind: policy.KeyClient}),
			rule("by-ip", policy.KeySpec{Kind: policy.KeyIP}),
			rule("by-header", policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant"}),
			rule("all", policy.KeySpec{Kind: policy.KeyGlobal}),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	saturday := time.Date(2026, 12, 12, 12, 0, 0, 0, time.UTC)
	in, _ := pol.At(saturday)
	if in == pol || in.RuleLimit(0).Rate() != 5 {
		t.Fatalf("Saturday: the entry is not in force (rate %d)", in.RuleLimit(0).Rate())
	}
	addr := netip.MustParseAddr("192.0.2.7")
	e := &Engine{}
	for _, id := range []string{"rule-rate", "scheduled", "own", ""} {
		out, _ := pol.CallerByID(id)
		sched, _ := in.CallerByID(id)
		if id == "" {
			out, sched = pol.Anonymous(), in.Anonymous()
		}
		for i := range pol.Rules() {
			for _, h := range []fields{{"X-Tenant": {"acme"}}, {}} {
				v := &Verdict{req: Request{Header: h}}
				before := stateKey(pol, out, i, &ipGroup{pol: pol, addr: addr, keys: e.keysFor(pol)}, v)
				during := stateKey(in, sched, i, &ipGroup{pol: in, addr: addr, keys: e.keysFor(in)}, v)
				if before != during {
					t.Errorf("caller %q rule %s: key %q out of the entry, %q in it", id, pol.Rule(i).Name, before, during)
				}
				if sched.Limit(i) == out.Limit(i) && (id == "rule-rate" || id == "scheduled") {
					t.Errorf("caller %q rule %s: the same limit %v in and out: the entry changed nothing to prove", id, pol.Rule(i).Name, out.Limit(i))
				}
			}
		}
	}
}
