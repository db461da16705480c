package live_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/live"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

var epoch = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// testPolicy has claims (per client, 100 a minute, rule 0) and per-ip
// (per address, 10 a minute, rule 1).
func testPolicy(t testing.TB) *policy.Compiled {
	t.Helper()
	pol, err := policy.Compile(policy.Policy{
		Clients: policy.Clients{List: []policy.Client{
			{ID: "partner-a", Keys: []string{"key-a"}}, {ID: "partner-b", Keys: []string{"key-b"}}}},
		Rules: []policy.Rule{
			{Name: "claims", Match: policy.Match{Path: "/claims"}, Key: policy.KeySpec{Kind: policy.KeyClient},
				Algorithm: limiter.SlidingWindow, Rate: policy.Rate{N: 100, Period: time.Minute}},
			{Name: "per-ip", Match: policy.Match{Path: "/"}, Key: policy.KeySpec{Kind: policy.KeyIP},
				Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 10, Period: time.Minute}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

// result is one rule's result for report.
type result struct {
	rule      int // index in testPolicy
	key       string
	outcome   decision.Outcome
	remaining int64
	limit     int64
	reset     time.Duration
}

var ruleNames = []string{"claims", "per-ip"}

// report is a request's report as the decision core would give it: a
// 429 with retry when a result is Limited.
func report(client string, retry time.Duration, results ...result) *decision.Report {
	rep := &decision.Report{Client: client}
	for _, r := range results {
		d := limiter.Decision{Allowed: r.outcome == decision.Allowed, Limit: r.limit, Remaining: r.remaining, Reset: r.reset}
		if r.outcome == decision.Limited {
			d.RetryAfter = retry
			rep.Status, rep.RetryAfter = http.StatusTooManyRequests, retry
		}
		rep.Rules = append(rep.Rules, decision.RuleResult{Rule: ruleNames[r.rule], Index: r.rule, Key: store.RawKey(r.key), Outcome: r.outcome, Decision: d})
	}
	return rep
}

// allowed and limited are results of claims for client's counter.
func allowed(key string, remaining int64) result {
	return result{rule: 0, key: key, outcome: decision.Allowed, remaining: remaining, limit: 100, reset: time.Minute}
}

func limited(key string) result {
	return result{rule: 0, key: key, outcome: decision.Limited, limit: 100, reset: time.Minute}
}

// rule returns the view of the rule named name.
func rule(t *testing.T, s live.Snapshot, name string) live.RuleView {
	t.Helper()
	for _, r := range s.Rules {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no rule %s in %+v", name, s.Rules)
	return live.RuleView{}
}

// caller returns the listed caller counted as counted (ok false if none).
func caller(v live.RuleView, client string) (live.Caller, bool) {
	for _, c := range v.Top {
		if c.Client == client {
			return c, true
		}
	}
	return live.Caller{}, false
}
