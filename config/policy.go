package config

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/throttle"
	"go.yaml.in/yaml/v3"
)

// policy decodes the policy's parts of the top-level mapping m.
// Rules are required unless rulesOptional (Envoy's rule files stand in).
func (d *decoder) policy(m map[string]*yaml.Node, root *yaml.Node, rulesOptional bool) policy.Policy {
	var p policy.Policy
	for i, n := range d.list(m["trusted_proxies"], "trusted_proxies", "CIDRs or IP addresses") {
		if pfx, ok := d.prefix(n, index("trusted_proxies", i)); ok {
			p.TrustedProxies = append(p.TrustedProxies, pfx)
			if pfx.Bits() == 0 {
				d.warnf(n, index("trusted_proxies", i), "%v trusts every address as a proxy: any caller can name the address it is counted by (list only your proxies' networks, such as 10.0.0.0/8)", pfx)
			}
		}
	}
	p.ForwardedHeader = d.forwardedHeader(m["forwarded_header"], "forwarded_header")
	p.IPv6Prefix = int(d.integer(m["ipv6_prefix"], "ipv6_prefix", 1, 128, policy.DefaultIPv6Prefix, fmt.Sprintf("1 to 128; default %d", policy.DefaultIPv6Prefix)))
	p.CaseInsensitivePaths = d.boolean(m["case_insensitive_paths"], "case_insensitive_paths")
	p.Clients = d.clients(m["clients"], "clients")
	p.Plans = d.plans(m["plans"], "plans")
	p.Location = d.timeZone(m["time_zone"], "time_zone")
	if rulesOptional && isNull(m["rules"]) || d.required(m, root, "", "rules", "rules: [{name: api, rate: 100/m}]") {
		ids := map[string]bool{}
		for _, c := range p.Clients.List {
			if c.ID != "" {
				ids[c.ID] = true
			}
		}
		for i, n := range d.list(m["rules"], "rules", "rules") {
			p.Rules = append(p.Rules, d.rule(n, index("rules", i), ids))
		}
		if len(p.Rules) == 0 && !rulesOptional && !d.failed["rules"] {
			d.fail(m["rules"], "rules", "no rules (at least one rule is required)")
		}
	}
	return p
}

// forwardedHeaders are the values forwarded_header accepts.
var forwardedHeaders = []string{"x-forwarded-for", "forwarded"}

// forwardedHeader decodes the one header trusted proxies write the caller's
// address in. Like header names, it is case-insensitive.
func (d *decoder) forwardedHeader(n *yaml.Node, path string) policy.ForwardedHeader {
	s, ok := d.scalar(n, path, "x-forwarded-for or forwarded")
	if !ok {
		return policy.XForwardedFor
	}
	switch strings.ToLower(s) {
	case "x-forwarded-for":
		return policy.XForwardedFor
	case "forwarded":
		return policy.Forwarded
	}
	d.fail(n, path, "unknown value %q (%saccepted: %s; default x-forwarded-for)",
		clip(s), didYouMean(s, forwardedHeaders), strings.Join(forwardedHeaders, ", "))
	return policy.XForwardedFor
}

// prefix decodes a CIDR or a bare IP address (a /32 or /128).
func (d *decoder) prefix(n *yaml.Node, path string) (netip.Prefix, bool) {
	s, ok := d.scalar(n, path, "a CIDR or an IP address")
	if !ok {
		return netip.Prefix{}, false
	}
	p, err := parsePrefix(s)
	if err != nil {
		d.fail(n, path, "%q is not a CIDR or an IP address (such as 10.0.0.0/8, 192.0.2.7 or 2001:db8::/32)", clip(s))
		return netip.Prefix{}, false
	}
	return p, true
}

// parsePrefix parses a CIDR (host bits are cleared) or a bare IP address.
// IPv4-mapped IPv6 networks become IPv4 ones, as callers' addresses are
// unmapped before they are compared.
func parsePrefix(s string) (netip.Prefix, error) {
	if strings.Contains(s, "/") {
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return p, err
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		return p.Masked(), nil
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Prefix{}, err
	}
	if a.Zone() != "" {
		return netip.Prefix{}, errors.New("zone not allowed")
	}
	a = a.Unmap()
	return netip.PrefixFrom(a, a.BitLen()), nil
}

var clientsFields = []string{"key_header", "unknown", "list"}

// clients decodes the clients block.
func (d *decoder) clients(n *yaml.Node, path string) policy.Clients {
	var c policy.Clients
	m := d.fields(n, path, "a mapping (key_header, unknown, list)", clientsFields)
	if h := m["key_header"]; !isNull(h) {
		c.KeyHeader = d.str(h, join(path, "key_header"), "a header name", "")
		if c.KeyHeader != "" && !validHeaderName(c.KeyHeader) || c.KeyHeader == "" && !d.failed[join(path, "key_header")] {
			d.fail(h, join(path, "key_header"), "%q is not an HTTP header name (letters, digits and !#$%%&'*+-.^_`|~; default %s)", clip(c.KeyHeader), policy.DefaultKeyHeader)
			c.KeyHeader = ""
		}
	}
	if d.oneOf(m["unknown"], join(path, "unknown"), "reject", []string{"reject", "anonymous"}) == "anonymous" {
		c.Unknown = policy.UnknownAnonymous
	}
	for i, n := range d.list(m["list"], join(path, "list"), "clients") {
		c.List = append(c.List, d.client(n, index(join(path, "list"), i)))
	}
	return c
}

var clientFields = []string{"id", "keys", "certs", "plan", "limits"}

// client decodes one entry of clients.list.
func (d *decoder) client(n *yaml.Node, path string) policy.Client {
	var c policy.Client
	m := d.fields(n, path, "a client (id, keys, certs, plan, limits)", clientFields)
	if d.failed[path] {
		return c
	}
	if d.required(m, n, path, "id", "id: partner-a") {
		c.ID = d.str(m["id"], join(path, "id"), "a client id", "")
	}
	for i, k := range d.list(m["keys"], join(path, "keys"), "access keys") {
		key, _ := d.secret(k, index(join(path, "keys"), i), "an access key")
		c.Keys = append(c.Keys, key)
	}
	for i, s := range d.list(m["certs"], join(path, "certs"), "certificate selectors") {
		if sel, ok := d.certSelector(s, index(join(path, "certs"), i)); ok {
			c.Certs = append(c.Certs, sel)
		}
	}
	if len(c.Keys) == 0 && len(c.Certs) == 0 && !isNull(m["certs"]) {
		d.failed[join(path, "keys")] = true // its certs were wrong: "no keys" follows from that
	}
	c.Plan = d.str(m["plan"], join(path, "plan"), "a plan name", "")
	c.Limits, c.Concurrency = d.rates(m["limits"], join(path, "limits"))
	return c
}

// plans decodes the plans block: plan name -> rule name -> rate.
func (d *decoder) plans(n *yaml.Node, path string) map[string]policy.Plan {
	es, _ := d.entries(n, path, "a mapping of plan names to rates by rule")
	if len(es) == 0 {
		return nil
	}
	plans := make(map[string]policy.Plan, len(es))
	for _, e := range es {
		name := e.key.Value
		rates, own := e.val, map[string]*yaml.Node{}
		if e.val.Kind == yaml.MappingNode {
			own, rates = ownFields(e.val, planFields)
		}
		var pl policy.Plan
		pl.Limits, pl.Concurrency = d.rates(rates, join(path, name))
		pl.Schedule = d.planSchedule(own["schedule"], join(join(path, name), "schedule"))
		if prio := own["priority"]; prio != nil {
			at := join(join(path, name), "priority")
			p := d.priority(prio, at)
			pl.Priority = &p
			if p == throttle.Low {
				d.warnf(prio, at, "low does nothing: a plan raises its clients' priority, never lowers it (give the rules of the work to shed first priority: low)")
			}
		}
		plans[name] = pl
	}
	return plans
}

// rates decodes a mapping of rule names to overrides: rates for rate
// rules, and whole numbers (requests in flight) for concurrency rules;
// policy.Compile checks that each is of its rule's kind.
func (d *decoder) rates(n *yaml.Node, path string) (map[string]policy.Rate, map[string]int64) {
	es, _ := d.entries(n, path, "a mapping of rule names to rates, such as { claims: 500/m }")
	if len(es) == 0 {
		return nil, nil
	}
	rates := make(map[string]policy.Rate, len(es))
	var counts map[string]int64
	for _, e := range es {
		at := join(path, e.key.Value)
		if isNull(e.val) {
			d.fail(e.key, at, "missing rate (%s; or a count in flight, such as 20, for a concurrency rule)", rateSyntax)
		}
		if e.val.Kind == yaml.ScalarNode && e.val.Tag == "!!int" {
			if counts == nil {
				counts = map[string]int64{}
			}
			counts[e.key.Value] = d.integer(e.val, at, 1, policy.MaxConcurrency, 0,
				fmt.Sprintf("1 to %d requests in flight, for a concurrency rule; or a rate, %s", policy.MaxConcurrency, rateSyntax))
			continue
		}
		if r, ok := d.rate(e.val, at); ok {
			rates[e.key.Value] = r
		}
	}
	return rates, counts
}
