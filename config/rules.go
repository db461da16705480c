package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"go.yaml.in/yaml/v3"
)

var (
	ruleFields  = []string{"name", "match", "key", "missing_header", "algorithm", "rate", "concurrency", "burst", "delay", "cost", "mode", "allow", "priority", "degrade", "count", "cost_header", "schedule"}
	matchFields = []string{"host", "path", "methods", "headers"}
	keyKinds    = []string{"client", "ip", "header:NAME", "global"}
)

// rule decodes one entry of rules; ids are the listed clients' ids.
func (d *decoder) rule(n *yaml.Node, path string, ids map[string]bool) policy.Rule {
	var r policy.Rule
	m := d.fields(n, path, "a rule (name, match, key, algorithm, rate, ...)", ruleFields)
	if d.failed[path] {
		return r
	}
	r.Name = d.str(m["name"], join(path, "name"), "a rule name", "")
	mm := d.fields(m["match"], join(path, "match"), "a mapping (host, path, methods, headers)", matchFields)
	r.Match.Host = d.str(mm["host"], join(path, "match.host"), "a host name, such as api.example.com or *.example.com", "")
	r.Match.Path = d.str(mm["path"], join(path, "match.path"), "a path prefix", "")
	r.Match.Headers = d.matchHeaders(mm["headers"], join(path, "match.headers"))
	for i, mn := range d.list(mm["methods"], join(path, "match.methods"), "HTTP methods") {
		r.Match.Methods = append(r.Match.Methods, d.method(mn, index(join(path, "match.methods"), i)))
	}
	r.Key = d.key(m["key"], join(path, "key"), len(ids) > 0)
	r.Key.Missing = d.missingHeader(m["missing_header"], join(path, "missing_header"), r.Key)
	if alg := d.oneOf(m["algorithm"], join(path, "algorithm"), "", algorithmNames()); alg != "" {
		r.Algorithm, _ = limiter.ParseAlgorithm(alg)
	}
	if !isNull(m["priority"]) {
		r.Priority = new(d.priority(m["priority"], join(path, "priority")))
	}
	r.Degrade = d.boolean(m["degrade"], join(path, "degrade"))
	r.Concurrency = d.integer(m["concurrency"], join(path, "concurrency"), 1, policy.MaxConcurrency, 0,
		fmt.Sprintf("1 to %d requests in flight", policy.MaxConcurrency))
	if d.failed[join(path, "concurrency")] {
		r.Concurrency = 1 // reported: the rule is still no rate rule, whose missing rate would be reported too
	}
	// A rule without rate limits requests in flight, or only classifies.
	classifies := !isNull(m["priority"]) || !isNull(m["degrade"]) || !isNull(m["concurrency"])
	if !isNull(m["rate"]) || !classifies && d.required(m, n, path, "rate", "rate: 100/m, or concurrency: 10; or priority/degrade for a rule that only classifies") {
		r.Rate, _ = d.rate(m["rate"], join(path, "rate"))
	}
	if !isNull(m["rate"]) && d.failed[join(path, "rate")] {
		d.rateless[path] = r.Name
	}
	r.Burst = d.integer(m["burst"], join(path, "burst"), 1, 1<<62, 0, "1 or more; default: the rate's N")
	d.warnWindowBurst(m, path, r)
	r.Delay = d.delay(m, join(path, "delay"))
	r.Cost = d.integer(m["cost"], join(path, "cost"), 1, 1<<62, policy.DefaultCost, fmt.Sprintf("1 or more; default %d", policy.DefaultCost))
	if d.oneOf(m["mode"], join(path, "mode"), "enforce", []string{"enforce", "shadow"}) == "shadow" {
		r.Mode = policy.Shadow
	}
	d.settle(m, path, &r)
	for i, an := range d.list(m["allow"], join(path, "allow"), "client ids and CIDRs") {
		d.allow(an, index(join(path, "allow"), i), ids, &r)
	}
	r.Schedule = d.schedule(m["schedule"], join(path, "schedule"))
	return r
}

// matchHeaders decodes a rule's match.headers: header name -> the exact
// value, or {present: true} for any value.
func (d *decoder) matchHeaders(n *yaml.Node, path string) []policy.HeaderMatch {
	es, _ := d.entries(n, path, "a mapping of header names to values, such as { X-Env: prod, X-Debug: { present: true } }")
	var out []policy.HeaderMatch
	for _, e := range es {
		at := join(path, e.key.Value)
		h := policy.HeaderMatch{Name: e.key.Value}
		switch {
		case isNull(e.val):
			d.fail(e.key, at, "missing value (a value such as prod, or { present: true } for any value)")
			continue
		case e.val.Kind == yaml.MappingNode:
			pm := d.fields(e.val, at, "{ present: true }", []string{"present"})
			if !d.required(pm, e.val, at, "present", "present: true") {
				continue
			}
			if !d.boolean(pm["present"], join(at, "present")) && !d.failed[join(at, "present")] {
				d.fail(pm["present"], join(at, "present"), "false is not accepted: a rule matches requests that send a header, never those that leave it out, which would let a caller escape the rule by sending it (present: true, or a value such as prod)")
				continue
			}
			h.Present = true
		default:
			v, ok := d.scalar(e.val, at, "a value such as prod, or { present: true }")
			if !ok {
				continue
			}
			h.Value = v
		}
		out = append(out, h)
	}
	return out
}

// warnWindowBurst warns of a burst on a rule whose algorithm counts in
// windows (fixed_window, sliding_window, sliding_log): it is ignored. A
// file that gave one has always been accepted, so this is a warning, not an
// error. A concurrency rule's burst is policy.Compile's error.
func (d *decoder) warnWindowBurst(m map[string]*yaml.Node, path string, r policy.Rule) {
	if r.Burst == 0 || r.Concurrency != 0 {
		return
	}
	alg, how := r.Algorithm, ""
	if alg == 0 {
		alg, how = policy.DefaultAlgorithm, ", the default"
	}
	if alg.HasBurst() {
		return
	}
	d.warnf(m["burst"], join(path, "burst"), "a burst applies only to token_bucket, gcra and leaky_bucket (rule %s is %v%s): it is ignored (remove it, or choose one of those algorithms)", r.Name, alg, how)
}

func algorithmNames() []string {
	names := make([]string, len(limiter.Algorithms))
	for i, a := range limiter.Algorithms {
		names[i] = a.String()
	}
	return names
}

// method decodes an HTTP method: an upper-case token.
func (d *decoder) method(n *yaml.Node, path string) string {
	s, ok := d.scalar(n, path, "an HTTP method")
	if ok && (!validHeaderName(s) || strings.ToUpper(s) != s) {
		d.fail(n, path, "%q is not an HTTP method in upper case (such as GET, POST)", clip(s))
	}
	return s
}

// key decodes what a rule counts by. Absent, it is client when clients are
// listed and ip otherwise.
func (d *decoder) key(n *yaml.Node, path string, haveClients bool) policy.KeySpec {
	s, ok := d.scalar(n, path, "client, ip, header:NAME or global")
	if !ok {
		if haveClients {
			return policy.KeySpec{Kind: policy.KeyClient}
		}
		return policy.KeySpec{Kind: policy.KeyIP}
	}
	if name, ok := strings.CutPrefix(s, "header:"); ok {
		return policy.KeySpec{Kind: policy.KeyHeader, Header: name}
	}
	switch s {
	case "client":
		if !haveClients {
			d.fail(n, path, "client, but no clients are listed (list them under clients.list, or count by ip, header:NAME or global)")
		}
		return policy.KeySpec{Kind: policy.KeyClient}
	case "ip":
		return policy.KeySpec{Kind: policy.KeyIP}
	case "global":
		return policy.KeySpec{Kind: policy.KeyGlobal}
	}
	d.fail(n, path, "unknown key %q (%saccepted: %s)", clip(s), didYouMean(s, keyKinds), strings.Join(keyKinds, ", "))
	return policy.KeySpec{Kind: policy.KeyIP}
}

// missingHeader decodes how a header:NAME rule counts a request without the
// header: shared (the default), ip or reject. Other keys take none.
func (d *decoder) missingHeader(n *yaml.Node, path string, key policy.KeySpec) policy.MissingHeader {
	names := make([]string, len(policy.MissingHeaders))
	for i, m := range policy.MissingHeaders {
		names[i] = m.String()
	}
	s := d.oneOf(n, path, "", names)
	if s == "" {
		return policy.MissingShared
	}
	if key.Kind != policy.KeyHeader {
		d.fail(n, path, "%s applies only to key: header:NAME (this rule counts by %v; remove missing_header)", s, key)
		return policy.MissingShared
	}
	i := slices.Index(names, s)
	return policy.MissingHeaders[i]
}

// allow decodes one entry of a rule's allow list: a CIDR or an IP address
// (to AllowNets), or a listed client's id (to Allow).
func (d *decoder) allow(n *yaml.Node, path string, ids map[string]bool, r *policy.Rule) {
	s, ok := d.scalar(n, path, "a client id or a CIDR")
	if !ok {
		return
	}
	if p, err := parsePrefix(s); err == nil {
		r.AllowNets = append(r.AllowNets, p)
		if p.Bits() == 0 {
			d.warnf(n, path, "%v is every address: the rule never limits anyone (list the networks it should not limit, such as 10.0.0.0/8)", p)
		}
		return
	}
	if ids[s] {
		r.Allow = append(r.Allow, s)
		return
	}
	known := "no clients are listed"
	if len(ids) > 0 {
		known = "client ids: " + strings.Join(slices.Sorted(maps.Keys(ids)), ", ")
	}
	d.fail(n, path, "%q is neither a listed client id nor an IP address or CIDR (%s; or networks such as 10.0.0.0/8, 192.0.2.7)", clip(s), known)
}

// validHeaderName reports whether s is an HTTP field name (an RFC 9110
// token).
func validHeaderName(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
