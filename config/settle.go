package config

import (
	"fmt"

	"github.com/sluice-rl/sluice/policy"
	"go.yaml.in/yaml/v3"
)

// settle decodes a rule's count and cost_header into r, whose rate is
// decoded already.
func (d *decoder) settle(m map[string]*yaml.Node, path string, r *policy.Rule) {
	names := make([]string, len(policy.Counts))
	for i, c := range policy.Counts {
		names[i] = c.String()
	}
	switch d.oneOf(m["count"], join(path, "count"), "all", names) {
	case "failures":
		r.Count = policy.CountFailures
	case "successes":
		r.Count = policy.CountSuccesses
	}
	if n := m["cost_header"]; !isNull(n) {
		r.CostHeader = d.costHeader(n, join(path, "cost_header"))
	}
	if r.Count == policy.CountAll && r.CostHeader == "" {
		return
	}
	what, n := "count", m["count"]
	if r.Count == policy.CountAll {
		what, n = "cost_header", m["cost_header"]
	}
	if r.Classifies() {
		d.fail(n, join(path, what), "applies only to a rule with a rate (this rule only classifies; add rate: such as 5/15m, or remove %s)", what)
	}
}

// costHeader decodes a cost_header: a header name the upstream can send
// and a proxy passes on.
func (d *decoder) costHeader(n *yaml.Node, path string) string {
	s, ok := d.scalar(n, path, "a response header name such as X-Usage-Tokens")
	switch {
	case !ok:
		return ""
	case !validHeaderName(s):
		d.fail(n, path, "%q is not a header name (want a name such as X-Usage-Tokens: letters, digits and !#$%%&'*+-.^_`|~)", clip(s))
		return ""
	case policy.HopByHop(s):
		d.fail(n, path, "%s is a hop-by-hop header, which no proxy passes on (want the upstream's own header, such as X-Usage-Tokens)", s)
		return ""
	}
	return s
}

// costText is a rule's cost as sluice check shows it, with what settles
// it after the response: "1", "1, failures only", "100, then X-Usage-Tokens".
func costText(r *policy.Rule) string {
	s := fmt.Sprint(r.Cost)
	if r.Count != policy.CountAll {
		s += ", " + r.Count.String() + " only"
	}
	if r.CostHeader != "" {
		s += ", then " + r.CostHeader
	}
	return s
}
