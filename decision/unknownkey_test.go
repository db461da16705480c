package decision_test

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// TestUnknownKey: with unknown: anonymous, a key that is no listed
// client's is counted as anonymous, and its answer, passed or refused,
// says so (X-Sluice-Key: unknown; Report.UnknownKey). A listed key, no key,
// and an unknown key refused 401 under unknown: reject do not.
func TestUnknownKey(t *testing.T) {
	anon, err := policy.Compile(policy.Policy{
		Clients: policy.Clients{Unknown: policy.UnknownAnonymous, List: []policy.Client{{ID: "partner-a", Keys: []string{"key-a"}}}},
		Rules: []policy.Rule{{Name: "claims", Match: policy.Match{Path: "/claims"}, Key: policy.KeySpec{Kind: policy.KeyClient},
			Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 1, Period: time.Minute}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var reports []bool
	e := engine(t, nil, func(o *decision.Options) {
		o.OnDecision = func(_ *decision.Request, rep *decision.Report) { reports = append(reports, rep.UnknownKey) }
	})
	for _, tc := range []struct {
		name    string
		pol     *policy.Compiled
		key     []string
		status  int
		client  string
		unknown bool
	}{
		{"listed key", anon, []string{"key-a"}, 0, "partner-a", false},
		{"mistyped key, passed", anon, []string{"key-aa"}, 0, "anonymous", true},
		{"mistyped key, limited", anon, []string{"key-b"}, 429, "anonymous", true}, // the anonymous callers' one request went
		{"no key", anon, nil, 429, "anonymous", false},
		{"unknown: reject", claims(t), []string{"key-aa"}, 401, "", false},
	} {
		h := hdr{}
		if tc.key != nil {
			h["X-Api-Key"] = tc.key
		}
		reports = reports[:0]
		a := decide(t, e, tc.pol, get("/claims/1", h))
		_, marked := a.fields[decision.UnknownKeyHeader]
		if a.status != tc.status || a.client != tc.client || marked != tc.unknown || len(reports) != 1 || reports[0] != tc.unknown {
			t.Errorf("%s: status %d, client %q, %s %q, reported %v; want %d, %q, marked %v", tc.name, a.status, a.client,
				decision.UnknownKeyHeader, a.fields[decision.UnknownKeyHeader], reports, tc.status, tc.client, tc.unknown)
		}
		if marked && a.fields[decision.UnknownKeyHeader] != "unknown" {
			t.Errorf("%s: %s: %q, want unknown", tc.name, decision.UnknownKeyHeader, a.fields[decision.UnknownKeyHeader])
		}
	}
}
