package config

import (
	"strings"
	"testing"
	"time"
)

// clientsHead lists partner-a on plan large and partner-b with an
// override of its own.
const clientsHead = head + `clients:
  list:
    - {id: partner-a, keys: [key-a], plan: large}
    - {id: partner-b, keys: [key-b], limits: {partner-in-flight: 3}}
`

func TestConcurrencyRule(t *testing.T) {
	f, err := Parse("t.yaml", []byte(clientsHead+`plans:
  large: {claims: 1000/m, partner-in-flight: 20}
rules:
  - {name: claims, match: {path: /claims}, rate: 100/m}
  - {name: partner-in-flight, match: {path: /claims}, concurrency: 10, cost: 2}
store: {lease_ttl: 5s}
`))
	if err != nil {
		t.Fatal(err)
	}
	c := f.Compiled
	if r := c.Rule(1); r.Concurrency != 10 || r.Cost != 2 || !r.LimitsInFlight() {
		t.Errorf("rule = %+v, want concurrency 10, cost 2", r)
	}
	for id, want := range map[string]int64{"partner-a": 20, "partner-b": 3} {
		if cl, _ := c.CallerByID(id); cl.Concurrency(1) != want {
			t.Errorf("%s: concurrency %d, want %d", id, cl.Concurrency(1), want)
		}
	}
	if f.Store.LeaseTTL != 5*time.Second {
		t.Errorf("lease_ttl = %v, want 5s", f.Store.LeaseTTL)
	}
	var b strings.Builder
	if err := f.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"; concurrency leases expire 5s after their last renewal\n", "concurrency     10 in flight", "partner-in-flight  partner-a  large  20 in flight  plan", "partner-in-flight  partner-b  -      3 in flight   client"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
}

func TestConcurrencyErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"with rate", head + "rules:\n  - {name: a, rate: 1/s, concurrency: 10}\n",
			"t.yaml:4:39: rules[0].concurrency: a rule has rate or concurrency, not both (remove one, or write a second rule for the other)"},
		{"with algorithm", head + "rules:\n  - {name: a, concurrency: 10, algorithm: gcra}\n",
			"t.yaml:4:43: rules[0].algorithm: gcra applies to rates, and this rule counts requests in flight (remove algorithm, or give the rule a rate instead of concurrency)"},
		{"with burst", head + "rules:\n  - {name: a, concurrency: 10, burst: 5}\n",
			"t.yaml:4:39: rules[0].burst: a burst applies to rates, and this rule counts requests in flight (remove burst)"},
		{"zero", head + "rules:\n  - {name: a, concurrency: 0}\n",
			"t.yaml:4:28: rules[0].concurrency: 0 is out of range (1 to 1000000000 requests in flight)"},
		{"a rate", head + "rules:\n  - {name: a, concurrency: 10/s}\n",
			`t.yaml:4:28: rules[0].concurrency: "10/s" is not a whole number (1 to 1000000000 requests in flight)`},
		{"cost", head + "rules:\n  - {name: a, concurrency: 2, cost: 3}\n",
			"t.yaml:4:37: rules[0].cost: 3 is more than the 2 requests in flight that concurrency allows: every request would be refused (a cost of at most 2, or a larger concurrency)"},
		{"plan gives a rate", head + "plans: {big: {a: 10/s}}\nrules:\n  - {name: a, concurrency: 2}\n",
			"t.yaml:3:18: plans.big.a: rule a limits requests in flight: override it with a count such as 2, not the rate 10/s"},
		{"plan count out of range", head + "plans: {big: {a: -1}}\nrules:\n  - {name: a, concurrency: 2}\n",
			"t.yaml:3:18: plans.big.a: -1 is out of range (1 to 1000000000 requests in flight, for a concurrency rule; or a rate, " + rateSyntax + ")"},
		{"count", head + "rules:\n  - {name: a, concurrency: 2, count: failures}\n",
			"t.yaml:4:38: rules[0].count: a concurrency rule counts every request in flight, whatever its response (remove count; a rate rule can count failures)"},
		{"lease_ttl too short", head + "store: {lease_ttl: 100ms}\nrules:\n  - {name: a, concurrency: 2}\n",
			"t.yaml:3:20: store.lease_ttl: 100ms is out of range (1s to 24h0m0s in whole milliseconds; default 30s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.text))
			if err == nil || err.Error() != tc.want {
				t.Errorf("error:\n%v\nwant:\n%s", err, tc.want)
			}
		})
	}
}
