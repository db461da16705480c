package policy

import (
	"fmt"
	"maps"
	"slices"
)

// The checks of concurrency rules (Rule.Concurrency) and of their
// overrides, which are counts in flight where a rate rule's are rates.

// checkConcurrencyRule reports what a concurrency rule may not have: a
// concurrency out of range, a rate, an algorithm, a burst, a count or a
// cost_header (its requests hold their slots whatever the response; its
// delay is checked with the other rules').
func checkConcurrencyRule(at string, r Rule, fail func(string, string, ...any)) {
	if r.Concurrency < 1 || r.Concurrency > MaxConcurrency {
		fail(at+".concurrency", "%d out of range (1 to %d requests in flight)", r.Concurrency, MaxConcurrency)
	}
	if r.Rate != (Rate{}) {
		fail(at+".concurrency", "a rule has rate or concurrency, not both (remove one, or write a second rule for the other)")
	}
	if r.Algorithm != 0 {
		fail(at+".algorithm", "%v applies to rates, and this rule counts requests in flight (remove algorithm, or give the rule a rate instead of concurrency)", r.Algorithm)
	}
	if r.Burst != 0 {
		fail(at+".burst", "a burst applies to rates, and this rule counts requests in flight (remove burst)")
	}
	if r.Count != CountAll {
		fail(at+".count", "a concurrency rule counts every request in flight, whatever its response (remove count; a rate rule can count %v)", r.Count)
	}
	if r.CostHeader != "" {
		fail(at+".cost_header", "a concurrency rule counts every request in flight, whatever its response (remove cost_header; a rate rule can charge what the upstream reports)")
	}
}

// callerConcurrency returns concurrency rule r's limit for cl: its own
// override, else its plan's, else the rule's, with its LimitSource. A
// client's own override of the wrong kind (a rate) or out of range is
// reported at at; plans are checked once, by checkOverrides.
func (c *Compiled) callerConcurrency(r Rule, cl Client, fail func(string, string, ...any), at string) (int64, string) {
	n, src := r.Concurrency, ""
	if o, ok := c.src.Plans[cl.Plan].Concurrency[r.Name]; ok {
		n, src = o, "plan:"+cl.Plan
	}
	if o, ok := cl.Concurrency[r.Name]; ok {
		n, src = o, "client:"+cl.ID
		if msg := concurrencyProblem(o); msg != "" {
			fail(at+".limits."+r.Name, "%s", msg)
		}
	}
	return n, src
}

// concurrencyProblem says what is wrong with an override's count, or "".
func concurrencyProblem(n int64) string {
	if n < 1 || n > MaxConcurrency {
		return fmt.Sprintf("%d out of range (1 to %d requests in flight)", n, MaxConcurrency)
	}
	return ""
}

// checkOverrideKinds reports overrides of the wrong kind, in plans and
// clients: a rate for a concurrency rule, a count for a rate rule; and a
// plan's count out of range.
func (c *Compiled) checkOverrideKinds(names map[string]int, fail func(string, string, ...any)) {
	check := func(path string, rates map[string]Rate, counts map[string]int64) {
		for _, rule := range slices.Sorted(maps.Keys(rates)) {
			if i, ok := names[rule]; ok && c.rules[i].Concurrency != 0 {
				fail(path+"."+rule, "rule %s limits requests in flight: override it with a count such as %d, not the rate %v", rule, c.rules[i].Concurrency, rates[rule])
			}
		}
		for _, rule := range slices.Sorted(maps.Keys(counts)) {
			i, ok := names[rule]
			if ok && c.rules[i].Concurrency == 0 {
				fail(path+"."+rule, "rule %s is a rate rule: override it with a rate such as %v, not the count %d", rule, c.rules[i].Rate, counts[rule])
			}
		}
	}
	for _, plan := range slices.Sorted(maps.Keys(c.src.Plans)) {
		pl := c.src.Plans[plan]
		check("plans."+plan, pl.Limits, pl.Concurrency)
		for _, rule := range slices.Sorted(maps.Keys(pl.Concurrency)) {
			if msg := concurrencyProblem(pl.Concurrency[rule]); msg != "" {
				fail("plans."+plan+"."+rule, "%s", msg)
			}
		}
	}
	for i, cl := range c.src.Clients.List {
		check(fmt.Sprintf("clients.list[%d].limits", i), cl.Limits, cl.Concurrency)
	}
}

// checkConcurrencyCost reports a concurrency rule whose cost is more than
// a limit it applies allows in flight: every request would be refused.
func (c *Compiled) checkConcurrencyCost(i int, r Rule, fail func(string, string, ...any)) {
	if r.Concurrency > 0 && r.Cost > r.Concurrency {
		fail(fmt.Sprintf("rules[%d].cost", i), "%d is more than the %d requests in flight that concurrency allows: every request would be refused (a cost of at most %d, or a larger concurrency)",
			r.Cost, r.Concurrency, r.Concurrency)
	}
	override := func(path string, n int64) {
		if n > 0 && r.Cost > n {
			fail(path, "concurrency %d is less than rule %s's cost %d: every request would be refused (at least %d)", n, r.Name, r.Cost, r.Cost)
		}
	}
	for _, plan := range slices.Sorted(maps.Keys(c.src.Plans)) {
		if n, ok := c.src.Plans[plan].Concurrency[r.Name]; ok {
			override("plans."+plan+"."+r.Name, n)
		}
	}
	for j, cl := range c.src.Clients.List {
		if n, ok := cl.Concurrency[r.Name]; ok {
			override(fmt.Sprintf("clients.list[%d].limits.%s", j, r.Name), n)
		}
	}
}
