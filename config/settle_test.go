package config

import (
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/policy"
)

// count takes all (the default), failures or successes; cost_header a
// header name that is not hop-by-hop; not on a rule that only
// classifies.
func TestSettleFields(t *testing.T) {
	for text, want := range map[string]policy.Rule{
		"":                                  {},
		"    count: all\n":                  {},
		"    count: failures\n":             {Count: policy.CountFailures},
		"    count: successes\n":            {Count: policy.CountSuccesses},
		"    cost_header: X-Usage-Tokens\n": {CostHeader: "X-Usage-Tokens"},
		"    count: failures\n    cost_header: x-cost\n": {Count: policy.CountFailures, CostHeader: "x-cost"},
	} {
		f := mustParse(t, head+"rules:\n  - name: t\n    rate: 5/15m\n"+text)
		if r := f.Compiled.Rule(0); r.Count != want.Count || r.CostHeader != want.CostHeader {
			t.Errorf("%q: count %v cost_header %q, want %v %q", text, r.Count, r.CostHeader, want.Count, want.CostHeader)
		}
	}
	for text, want := range map[string]string{
		"    count: failure\n":                        `t.yaml:6:12: rules[0].count: unknown value "failure" (did you mean "failures"? accepted: all, failures, successes)`,
		"    count: [failures]\n":                     `t.yaml:6:12: rules[0].count: want one of all, failures, successes, not a list`,
		"    cost_header: Transfer-Encoding\n":        "t.yaml:6:18: rules[0].cost_header: Transfer-Encoding is a hop-by-hop header, which no proxy passes on (want the upstream's own header, such as X-Usage-Tokens)",
		"    cost_header: connection\n":               "t.yaml:6:18: rules[0].cost_header: connection is a hop-by-hop header",
		"    cost_header: X Cost\n":                   `t.yaml:6:18: rules[0].cost_header: "X Cost" is not a header name (want a name such as X-Usage-Tokens`,
		"    cost_header: 7\n":                        ``, // a number is a valid token: accepted
		"    cost_header: x-ratelimit-remaining\n":    "t.yaml:6:18: rules[0].cost_header: x-ratelimit-remaining is a header sluice writes on every answer it passes on",
		"    cost_header: RateLimit\n":                "t.yaml:6:18: rules[0].cost_header: RateLimit is a header sluice writes",
		"    algorithm: gcra\n    count: successes\n": ``,
	} {
		_, err := Parse("t.yaml", []byte(head+"rules:\n  - name: t\n    rate: 5/15m\n"+text))
		switch {
		case want == "" && err != nil:
			t.Errorf("%q: %v", text, err)
		case want != "" && (err == nil || !strings.Contains(err.Error(), want)):
			t.Errorf("%q: error %v, want %q", text, err, want)
		}
	}
	_, err := Parse("t.yaml", []byte(head+"rules:\n  - name: t\n    priority: low\n    count: failures\n"))
	if want := "t.yaml:6:12: rules[0].count: applies only to a rule with a rate"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("count on a rule that only classifies: %v, want %q", err, want)
	}
}

// A library user's policy is checked as a file is.
func TestSettleChecksPolicy(t *testing.T) {
	rate := policy.Rate{N: 5, Period: 60e9}
	for _, tc := range []struct {
		rule policy.Rule
		want string
	}{
		{policy.Rule{Count: 9}, "rules[0].count: unknown value 9"},
		{policy.Rule{CostHeader: "Upgrade"}, `rules[0].cost_header: "Upgrade" is not a header the upstream can send`},
		{policy.Rule{CostHeader: "a b"}, `rules[0].cost_header: "a b" is not a header`},
		{policy.Rule{Count: policy.CountFailures, Rate: policy.Rate{}}, "rules[0].count: count and cost_header apply only to a rule with a rate"},
	} {
		tc.rule.Name = "t"
		if tc.rule.Count != policy.CountFailures {
			tc.rule.Rate = rate
		}
		_, err := policy.Compile(policy.Policy{Rules: []policy.Rule{tc.rule}})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.rule, err, tc.want)
		}
	}
}

// sluice check shows what settles a rule's cost.
func TestSettleSummary(t *testing.T) {
	f := mustParse(t, head+"rules:\n  - name: login\n    rate: 5/15m\n    count: failures\n"+
		"  - name: tokens\n    algorithm: token_bucket\n    rate: 1000/h\n    cost: 100\n    cost_header: X-Usage-Tokens\n")
	var b strings.Builder
	if err := f.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"1, failures only", "100, then X-Usage-Tokens"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}
