package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/throttle"
)

// The checks Compile makes beyond each rule's own fields: overrides,
// costs, allow lists and match paths.

// checkOverrides reports a plan's override that gives its rule no valid
// limit (a rule the plan names that does not exist: checkRuleNames).
func (c *Compiled) checkOverrides(names map[string]int, fail func(string, string, ...any)) {
	for _, plan := range slices.Sorted(maps.Keys(c.src.Plans)) {
		if !validName(plan) {
			fail("plans."+plan, "%q is not a valid plan name (letters, digits, '_', '-', '.'; 1 to 64)", plan)
		}
		pl := c.src.Plans[plan]
		if p := pl.Priority; p != nil && (*p < throttle.Low || *p > throttle.Critical) {
			fail("plans."+plan+".priority", "unknown priority %d (critical, high, normal or low)", *p)
		}
		for _, rule := range slices.Sorted(maps.Keys(pl.Limits)) {
			rate := pl.Limits[rule]
			i, ok := names[rule]
			if !ok || c.rules[i].Concurrency != 0 {
				continue // checkRuleNames, checkOverrideKinds report it
			}
			if c.rules[i].Classifies() {
				fail("plans."+plan+"."+rule, "rule %s has no rate to override: it only classifies requests (give the rule a rate, or remove this override)", rule)
				continue
			}
			if _, err := ruleLimit(c.rules[i].Rule, rate); err != nil {
				_, msg := limitProblem(err)
				fail("plans."+plan+"."+rule, "%s", msg)
			}
		}
	}
}

// checkRuleNames reports overrides, in plans and in clients' own limits,
// of rules that do not exist.
func (c *Compiled) checkRuleNames(names map[string]int, failName func(string, string, ...any)) {
	check := func(path string, rules []string) {
		for _, rule := range rules {
			if _, ok := names[rule]; !ok {
				failName(path+"."+rule, "unknown rule %q (rules: %s)", rule, ruleNames(c.src.Rules))
			}
		}
	}
	for _, plan := range slices.Sorted(maps.Keys(c.src.Plans)) {
		check("plans."+plan, slices.Sorted(maps.Keys(c.src.Plans[plan].Limits)))
		check("plans."+plan, slices.Sorted(maps.Keys(c.src.Plans[plan].Concurrency)))
	}
	for i, cl := range c.src.Clients.List {
		check(fmt.Sprintf("clients.list[%d].limits", i), slices.Sorted(maps.Keys(cl.Limits)))
		check(fmt.Sprintf("clients.list[%d].limits", i), slices.Sorted(maps.Keys(cl.Concurrency)))
	}
}

// checkCosts reports a rule whose cost is more than a limit it applies can
// ever allow at once (the rate's N, or the burst of a bucket): every request
// under that limit would be refused, forever. It checks the rule's own rate,
// every plan's override and every client's own limit.
func (c *Compiled) checkCosts(fail func(string, string, ...any)) {
	for i, r := range c.rules {
		if r.Concurrency != 0 {
			c.checkConcurrencyCost(i, r.Rule, fail)
			continue
		}
		if l, err := ruleLimit(r.Rule, r.Rate); err == nil && r.Cost > l.Burst() {
			fail(fmt.Sprintf("rules[%d].cost", i), "%d is more than the %d that %s allows at once: every request would be refused (a cost of at most %d, or a larger rate or burst)",
				r.Cost, l.Burst(), capacityText(l), l.Burst())
		}
		override := func(path string, rate Rate) {
			if l, err := ruleLimit(r.Rule, rate); err == nil {
				if msg := costProblem(r.Rule, l); msg != "" {
					fail(path, "%s", msg)
				}
			}
		}
		for _, plan := range slices.Sorted(maps.Keys(c.src.Plans)) {
			if rate, ok := c.src.Plans[plan].Limits[r.Name]; ok {
				override("plans."+plan+"."+r.Name, rate)
			}
		}
		for j, cl := range c.src.Clients.List {
			if rate, ok := cl.Limits[r.Name]; ok {
				override(fmt.Sprintf("clients.list[%d].limits.%s", j, r.Name), rate)
			}
		}
	}
}

// costProblem says why rule r's requests could never pass under l, an
// override of its limit (a plan's, a client's, a runtime one): its cost
// is more than l allows at once. "" when they can.
func costProblem(r Rule, l limiter.Limit) string {
	if r.Cost <= l.Burst() {
		return ""
	}
	return fmt.Sprintf("%s allows at most %d at once, less than rule %s's cost %d: every request would be refused (a limit of at least %d at once)",
		capacityText(l), l.Burst(), r.Name, r.Cost, r.Cost)
}

// capacityText names a limit as configuration writes it: "rate 100/m",
// "rate 10/s with burst 5".
func capacityText(l limiter.Limit) string {
	s := "rate " + Rate{N: l.Rate(), Period: l.Period()}.String()
	if l.Algorithm().HasBurst() {
		s += fmt.Sprintf(" with burst %d", l.Burst())
	}
	return s
}

// checkAllowIDs reports allow-list entries that name no listed client.
func (c *Compiled) checkAllowIDs(fail func(string, string, ...any)) {
	for i, r := range c.src.Rules {
		for j, id := range r.Allow {
			if _, ok := c.byID[id]; !ok {
				fail(fmt.Sprintf("rules[%d].allow[%d]", i, j), "unknown client id %q (a client id from clients.list, or an IP address or CIDR)", id)
			}
		}
	}
}

func ruleNames(rules []Rule) string {
	var s []string
	for _, r := range rules {
		if r.Name != "" && !slices.Contains(s, r.Name) {
			s = append(s, r.Name)
		}
	}
	return strings.Join(s, ", ")
}

func planNames(plans map[string]Plan) string {
	if len(plans) == 0 {
		return "none defined"
	}
	return strings.Join(slices.Sorted(maps.Keys(plans)), ", ")
}

// checkMatch checks a rule's match: a clean path, upper-case methods.
func checkMatch(at string, m Match, fail func(string, string, ...any)) {
	if m.Path != "" && !strings.HasPrefix(m.Path, "/") {
		fail(at+".match.path", "%q must start with '/'", m.Path)
	} else if clean, ok := cleanRulePath(m.Path); !ok {
		fail(at+".match.path", "%q never matches: request paths are cleaned first (write %s)", m.Path, clean)
	} else {
		checkWildPath(at, m.Path, fail)
	}
	for j, method := range m.Methods {
		if method == "" || strings.ToUpper(method) != method || strings.ContainsAny(method, " \t\r\n") {
			fail(fmt.Sprintf("%s.match.methods[%d]", at, j), "%q is not an HTTP method in upper case (such as GET, POST)", method)
		}
	}
}

// cleanRulePath reports whether a rule's path is in the decoded form that
// CleanPath gives request paths, so that the rule can match at all; if not,
// it says what to write instead.
func cleanRulePath(p string) (string, bool) {
	if p == "" {
		return "", true
	}
	raw := make([]byte, 0, len(p))
	for i := 0; i < len(p); i++ { // the rule's path is decoded: encode what stands for itself in no request
		if c := p[i]; c == '%' || plain[c] == refuse {
			raw = append(raw, '%', upperHex[c>>4], upperHex[c&15])
		} else {
			raw = append(raw, c)
		}
	}
	_, dec, err := CleanPath(string(raw))
	switch {
	case err != nil:
		return "a path without '%', '\\', '#', '?', ';' and control characters", false
	case dec != p:
		return fmt.Sprintf("%q", dec), false
	}
	return "", true
}
