package decision_test

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// The report names each rule's counter (its store key, the same for
// requests counted together) and, on request, what it counted: the client
// id, the address or the header's value, never the access key.
func TestReportCountedBy(t *testing.T) {
	pol, err := policy.Compile(policy.Policy{
		Clients: policy.Clients{List: []policy.Client{{ID: "partner-a", Keys: []string{"key-a"}}}},
		Rules: []policy.Rule{
			{Name: "claims", Match: policy.Match{Path: "/claims"}, Key: policy.KeySpec{Kind: policy.KeyClient},
				Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 1, Period: time.Minute}},
			{Name: "by-ip", Match: policy.Match{Path: "/claims"}, Key: policy.KeySpec{Kind: policy.KeyIP},
				Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 5, Period: time.Minute}},
			{Name: "tenant", Match: policy.Match{Path: "/claims"}, Key: policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant"},
				Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 5, Period: time.Minute}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	type seen struct{ rule, counted, key string }
	var got [][]seen
	e := engine(t, nil, func(o *decision.Options) {
		o.OnDecision = func(_ *decision.Request, rep *decision.Report) {
			var s []seen
			for j, r := range rep.Rules {
				if pol.Rule(r.Index).Name != r.Rule {
					t.Errorf("rule %s has index %d, which is %s", r.Rule, r.Index, pol.Rule(r.Index).Name)
				}
				s = append(s, seen{r.Rule, rep.CountedBy(j), r.Key.String()})
			}
			if rep.CountedBy(len(rep.Rules)) != "" || rep.CountedBy(-1) != "" {
				t.Error("CountedBy out of range is not empty")
			}
			got = append(got, s)
		}
	})
	req := get("/claims/1", hdr{"X-Api-Key": {"key-a"}, "X-Tenant": {"acme"}})
	decide(t, e, pol, req)
	decide(t, e, pol, req) // the second is limited by claims
	want := []seen{{"claims", "partner-a", ""}, {"by-ip", "192.0.2.1", ""}, {"tenant", `header X-Tenant "acme"`, ""}}
	for n, s := range got {
		if len(s) != len(want) {
			t.Fatalf("request %d: %d results, want %d", n, len(s), len(want))
		}
		for j := range want {
			if s[j].rule != want[j].rule || s[j].counted != want[j].counted || s[j].key == "" {
				t.Errorf("request %d rule %d: %+v, want %s counting %s on a key", n, j, s[j], want[j].rule, want[j].counted)
			}
			if s[j].key != got[0][j].key {
				t.Errorf("request %d rule %s counted on %q, the first on %q", n, s[j].rule, s[j].key, got[0][j].key)
			}
		}
	}
	// An unknown key is not identified: nothing to name.
	e2 := engine(t, nil, func(o *decision.Options) {
		o.OnDecision = func(_ *decision.Request, rep *decision.Report) {
			if rep.CountedBy(0) != "" {
				t.Error("an unidentified caller's report names a counter")
			}
		}
	})
	decide(t, e2, pol, get("/claims/1", hdr{"X-Api-Key": {"nope"}}))
}
