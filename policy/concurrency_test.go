package policy_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// inFlight is base with a concurrency rule, partner-in-flight (10), that
// plan large raises to 20 and client bolt to 30.
func inFlight() policy.Policy {
	p := base()
	p.Rules = append(p.Rules, policy.Rule{Name: "partner-in-flight", Match: policy.Match{Path: "/claims"}, Concurrency: 10})
	p.Plans["large"] = policy.Plan{Limits: p.Plans["large"].Limits, Concurrency: map[string]int64{"partner-in-flight": 20}}
	p.Clients.List[1].Concurrency = map[string]int64{"partner-in-flight": 30}
	return p
}

func TestConcurrencyOverrides(t *testing.T) {
	c := mustCompile(t, inFlight())
	const rule = 2
	for _, tc := range []struct {
		id     string
		n      int64
		source string
	}{{"acme", 20, "plan:large"}, {"bolt", 30, "client:bolt"}, {"corp", 10, ""}} {
		cl := callerByID(t, c, tc.id)
		if got := cl.Concurrency(rule); got != tc.n {
			t.Errorf("%s: Concurrency = %d, want %d", tc.id, got, tc.n)
		}
		if got := cl.LimitSource(rule); got != tc.source {
			t.Errorf("%s: LimitSource = %q, want %q", tc.id, got, tc.source)
		}
		if got := cl.StateTag(rule); got != "concurrency" {
			t.Errorf("%s: StateTag = %q, want concurrency", tc.id, got)
		}
		if cl.Concurrency(0) != 0 || cl.Limit(rule) != (limiter.Limit{}) {
			t.Errorf("%s: a rate rule has a concurrency or a concurrency rule a rate", tc.id)
		}
	}
	if r := c.Rule(rule); !r.LimitsInFlight() || r.Algorithm != 0 || r.Cost != 1 {
		t.Errorf("Rule = %+v, want a concurrency rule without algorithm, cost 1", r)
	}
}

func TestConcurrencyErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*policy.Policy)
		paths  []string
		text   string
	}{
		{"rate and concurrency", func(p *policy.Policy) { p.Rules[2].Rate = rate(5, time.Second) },
			[]string{"rules[2].concurrency"}, "rate or concurrency, not both"},
		{"algorithm", func(p *policy.Policy) { p.Rules[2].Algorithm = limiter.GCRA },
			[]string{"rules[2].algorithm"}, "counts requests in flight"},
		{"burst", func(p *policy.Policy) { p.Rules[2].Burst = 3 }, []string{"rules[2].burst"}, "remove burst"},
		{"negative", func(p *policy.Policy) { p.Rules[2].Concurrency = -1 }, []string{"rules[2].concurrency"}, "out of range"},
		{"huge", func(p *policy.Policy) { p.Rules[2].Concurrency = policy.MaxConcurrency + 1 }, []string{"rules[2].concurrency"}, "out of range"},
		{"cost", func(p *policy.Policy) { p.Rules[2].Cost = 11 }, []string{"rules[2].cost"}, "at most 10"},
		{"cost above an override", func(p *policy.Policy) {
			p.Rules[2].Cost = 5
			p.Plans["large"].Concurrency["partner-in-flight"] = 4
		}, []string{"plans.large.partner-in-flight"}, "less than rule partner-in-flight's cost 5"},
		{"plan gives a rate", func(p *policy.Policy) { p.Plans["large"].Limits["partner-in-flight"] = rate(5, time.Second) },
			[]string{"plans.large.partner-in-flight"}, "override it with a count such as 10"},
		{"plan gives a count to a rate rule", func(p *policy.Policy) { p.Plans["large"].Concurrency["api"] = 5 },
			[]string{"plans.large.api"}, "rate rule: override it with a rate such as 100/m"},
		{"client gives a rate", func(p *policy.Policy) {
			p.Clients.List[2].Limits = map[string]policy.Rate{"partner-in-flight": rate(5, time.Second)}
		}, []string{"clients.list[2].limits.partner-in-flight"}, "count such as 10"},
		{"client count out of range", func(p *policy.Policy) { p.Clients.List[1].Concurrency["partner-in-flight"] = 0 },
			[]string{"clients.list[1].limits.partner-in-flight"}, "out of range"},
		{"count", func(p *policy.Policy) { p.Rules[2].Count = policy.CountFailures },
			[]string{"rules[2].count"}, "a concurrency rule counts every request in flight"},
		{"cost_header", func(p *policy.Policy) { p.Rules[2].CostHeader = "X-Cost" },
			[]string{"rules[2].cost_header"}, "a concurrency rule counts every request in flight"},
		{"plan count for an unknown rule", func(p *policy.Policy) { p.Plans["large"].Concurrency["nope"] = 5 },
			[]string{"plans.large.nope"}, "unknown rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := inFlight()
			tc.change(&p)
			_, err := policy.Compile(p)
			if got := errorPaths(t, err); !slices.Equal(got, tc.paths) {
				t.Fatalf("error paths %q, want %q (%v)", got, tc.paths, err)
			}
			if !strings.Contains(err.Error(), tc.text) {
				t.Errorf("error %q does not say %q", err, tc.text)
			}
		})
	}
}
