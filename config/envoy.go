package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-rl/sluice/limiter"
)

// EnvoyDomain is one rule file of envoyproxy/ratelimit: a domain and its
// tree of descriptors, read as that service reads it (see LoadEnvoy).
type EnvoyDomain struct {
	Domain      string
	Descriptors []EnvoyDescriptor
	// File, Line and Col say where the domain was written.
	File      string
	Line, Col int
}

// EnvoyDescriptor is one node of a domain's tree: it matches a request's
// descriptor entry with this Key and, if Value is not empty, this Value. A
// Value containing '*' is a wildcard: each '*' matches any run of
// characters, including none.
type EnvoyDescriptor struct {
	Key   string
	Value string
	// RateLimit is the limit of a request's descriptor whose last entry
	// ends here; nil for none (only the nested descriptors limit).
	RateLimit   *EnvoyRateLimit
	Descriptors []EnvoyDescriptor
	// ShadowMode decides and counts, but never answers OVER_LIMIT.
	ShadowMode bool
	// QuotaMode makes a denial count toward OVER_LIMIT only when every
	// quota_mode descriptor of the request is over its limit.
	QuotaMode bool
	// DetailedMetric, ValueToMetric and Metadata are read and checked but
	// change no answer: sluice's metrics never carry request values, and
	// it sends no dynamic metadata.
	DetailedMetric bool
	ValueToMetric  bool
	// ShareThreshold makes every value matching the wildcard Value share
	// one counter, instead of one counter per value.
	ShareThreshold bool
	Line, Col      int
}

// EnvoyRateLimit is a descriptor's rate_limit.
type EnvoyRateLimit struct {
	// Unit is second, minute, hour, day, week, month (30 days) or year
	// (365 days), lower case; empty when Unlimited.
	Unit            string
	RequestsPerUnit uint32
	// Unlimited answers OK without counting.
	Unlimited bool
	// Name names the limit for Replaces; Replaces lists the names of the
	// limits this one replaces when both apply to one request.
	Name     string
	Replaces []string
	// Limit is the limit sluice decides: RequestsPerUnit per Unit with
	// Algorithm (default fixed_window, as envoyproxy/ratelimit counts) and
	// Burst (default RequestsPerUnit). The zero Limit for requests_per_unit
	// 0 denies every request, as envoyproxy/ratelimit does.
	Limit limiter.Limit
}

// envoyUnits are the units of rate_limit.unit and their length.
var envoyUnits = map[string]time.Duration{
	"second": time.Second,
	"minute": time.Minute,
	"hour":   time.Hour,
	"day":    24 * time.Hour,
	"week":   7 * 24 * time.Hour,
	"month":  30 * 24 * time.Hour,
	"year":   365 * 24 * time.Hour,
}

var envoyUnitNames = []string{"second", "minute", "hour", "day", "week", "month", "year"}

// EnvoyUnit returns the length of a rate_limit unit (second ... year).
func EnvoyUnit(unit string) (time.Duration, bool) {
	d, ok := envoyUnits[unit]
	return d, ok
}

// LoadEnvoy reads envoyproxy/ratelimit's rule files: each path is a file,
// or a directory whose *.yaml and *.yml files are read in name order. It
// reports every problem of every file, each at FILE:line:col. Two files of
// one domain are an error, as envoyproxy/ratelimit's default
// (MERGE_DOMAIN_CONFIG=false) has it.
func LoadEnvoy(paths []string) ([]EnvoyDomain, error) {
	return loadEnvoy(paths, "")
}

// LoadEnvoyFor reads the rule files as LoadEnvoy does, for a service
// deciding them on st: it also refuses, at FILE:line:col, a rate_limit
// whose algorithm st does not keep (with store type gossip, any but
// fixed_window and sliding_window, as the gateway's rules).
func LoadEnvoyFor(paths []string, st Store) ([]EnvoyDomain, error) {
	return loadEnvoy(paths, st.Type)
}

// loadEnvoy is LoadEnvoy for a store of type storeType ("": any).
func loadEnvoy(paths []string, storeType string) ([]EnvoyDomain, error) {
	files, err := envoyFiles(paths)
	if err != nil {
		return nil, err
	}
	var out []EnvoyDomain
	var errs Errors
	for _, f := range files {
		data, err := readFile(f)
		if err != nil {
			return nil, err
		}
		dom, err := parseEnvoy(f, data, storeType)
		var es Errors
		switch {
		case errors.As(err, &es):
			errs = append(errs, es...)
			continue
		case err != nil:
			return nil, err
		}
		if i := slices.IndexFunc(out, func(d EnvoyDomain) bool { return d.Domain == dom.Domain }); i >= 0 {
			first := out[i]
			errs = append(errs, &Error{File: f, Line: dom.Line, Col: dom.Col, Msg: fmt.Sprintf(
				"domain %q is already configured at %s:%d:%d (one file per domain)", clip(dom.Domain), first.File, first.Line, first.Col)})
			continue
		}
		out = append(out, *dom)
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return out, nil
}

// envoyFiles expands directories into their YAML files.
func envoyFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("config: envoy_config: %w", err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		ents, err := os.ReadDir(p)
		if err != nil {
			return nil, fmt.Errorf("config: envoy_config: %w", err)
		}
		for _, e := range ents {
			ext := filepath.Ext(e.Name())
			if !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	return files, nil
}

// ParseEnvoy parses one envoyproxy/ratelimit rule file; name is the file
// name used in errors. Besides that service's fields, a rate_limit may name
// an algorithm (any of sluice's six; default fixed_window) and a burst for
// the bucket algorithms.
func ParseEnvoy(name string, data []byte) (*EnvoyDomain, error) {
	return parseEnvoy(name, data, "")
}

// parseEnvoy is ParseEnvoy for a store of type storeType ("": any).
func parseEnvoy(name string, data []byte, storeType string) (*EnvoyDomain, error) {
	root, d, err := parseRoot(name, data, "domain, descriptors")
	if err != nil {
		return nil, err
	}
	d.storeType = storeType
	dom := &EnvoyDomain{File: name, Line: root.Line, Col: root.Column}
	if root.Kind != yaml.MappingNode {
		d.fail(root, "", "the file must be a mapping with domain and descriptors, not %s", kindName(root))
	} else {
		m := d.fields(root, "", "a mapping with domain and descriptors", []string{"domain", "descriptors"})
		if d.required(m, root, "", "domain", "domain: edge_proxy") {
			dom.Domain = d.str(m["domain"], "domain", "a name", "")
			if dom.Domain == "" && !d.failed["domain"] {
				d.fail(m["domain"], "domain", "empty (a domain is the name Envoy's rate_limits use, such as edge_proxy)")
			}
		}
		dom.Descriptors = d.envoyDescriptors(m["descriptors"], "descriptors")
	}
	if len(d.errs) > 0 {
		return nil, sortErrors(d.errs)
	}
	return dom, nil
}

var envoyDescriptorFields = []string{"key", "value", "rate_limit", "descriptors", "shadow_mode", "quota_mode",
	"detailed_metric", "value_to_metric", "share_threshold", "metadata"}

// envoyDescriptors decodes one level of a descriptor tree.
func (d *decoder) envoyDescriptors(n *yaml.Node, path string) []EnvoyDescriptor {
	var out []EnvoyDescriptor
	seen := map[[2]string]*yaml.Node{}
	for i, item := range d.list(n, path, "descriptors (key, value, rate_limit, descriptors)") {
		p := index(path, i)
		desc, ok := d.envoyDescriptor(item, p)
		if !ok {
			continue
		}
		id := [2]string{desc.Key, desc.Value}
		if first := seen[id]; first != nil {
			d.errorf(item, p, "duplicate descriptor key %q value %q (first at line %d)", clip(desc.Key), clip(desc.Value), first.Line)
			continue
		}
		seen[id] = item
		out = append(out, desc)
	}
	return out
}

// envoyDescriptor decodes one descriptor; ok is false if it has no usable key.
func (d *decoder) envoyDescriptor(n *yaml.Node, path string) (EnvoyDescriptor, bool) {
	desc := EnvoyDescriptor{Line: n.Line, Col: n.Column}
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a descriptor (key, value, rate_limit, descriptors), not %s", kindName(n))
		return desc, false
	}
	m := d.fields(n, path, "a descriptor", envoyDescriptorFields)
	ok := d.required(m, n, path, "key", "key: remote_address")
	if ok {
		desc.Key = d.str(m["key"], join(path, "key"), "a descriptor key", "")
		ok = desc.Key != ""
		if !ok && !d.failed[join(path, "key")] {
			d.fail(m["key"], join(path, "key"), "empty (a descriptor key is what Envoy's action sends, such as remote_address)")
		}
	}
	desc.Value = d.str(m["value"], join(path, "value"), "a descriptor value", "")
	desc.ShadowMode = d.boolean(m["shadow_mode"], join(path, "shadow_mode"))
	desc.QuotaMode = d.boolean(m["quota_mode"], join(path, "quota_mode"))
	desc.DetailedMetric = d.boolean(m["detailed_metric"], join(path, "detailed_metric"))
	desc.ValueToMetric = d.boolean(m["value_to_metric"], join(path, "value_to_metric"))
	desc.ShareThreshold = d.boolean(m["share_threshold"], join(path, "share_threshold"))
	if desc.ShareThreshold && !strings.Contains(desc.Value, "*") {
		d.fail(m["share_threshold"], join(path, "share_threshold"),
			"only for a wildcard value (one containing '*'), not %q", clip(desc.Value))
	}
	if md := m["metadata"]; d.usable(md, join(path, "metadata")) && md.Kind != yaml.MappingNode {
		d.fail(md, join(path, "metadata"), "want a mapping, not %s", kindName(md))
	}
	if rl := m["rate_limit"]; !isNull(rl) {
		desc.RateLimit = d.envoyRateLimit(rl, join(path, "rate_limit"))
	}
	desc.Descriptors = d.envoyDescriptors(m["descriptors"], join(path, "descriptors"))
	return desc, ok
}

var envoyRateLimitFields = []string{"unit", "requests_per_unit", "unlimited", "name", "replaces", "algorithm", "burst"}

// envoyRateLimit decodes a rate_limit and builds its sluice limit.
func (d *decoder) envoyRateLimit(n *yaml.Node, path string) *EnvoyRateLimit {
	m := d.fields(n, path, "a rate_limit (unit, requests_per_unit)", envoyRateLimitFields)
	rl := &EnvoyRateLimit{Unlimited: d.boolean(m["unlimited"], join(path, "unlimited"))}
	rl.Name = d.str(m["name"], join(path, "name"), "a name", "")
	rl.Replaces = d.envoyReplaces(m["replaces"], join(path, "replaces"), rl.Name)
	rpu := d.integer(m["requests_per_unit"], join(path, "requests_per_unit"), 0, 1<<32-1, 0, "0 to 4294967295")
	rl.RequestsPerUnit = uint32(rpu)
	unit, hasUnit := d.scalar(m["unit"], join(path, "unit"), "a unit")
	unit = strings.ToLower(unit)
	if hasUnit && envoyUnits[unit] == 0 {
		d.fail(m["unit"], join(path, "unit"), "unknown unit %q (%saccepted: %s)", clip(unit), didYouMean(unit, envoyUnitNames), strings.Join(envoyUnitNames, ", "))
		return rl
	}
	switch {
	case rl.Unlimited && hasUnit:
		d.fail(m["unit"], join(path, "unit"), "an unlimited rate_limit takes no unit (remove unit, or unlimited)")
		return rl
	case rl.Unlimited:
		return rl
	case !hasUnit && !d.failed[join(path, "unit")]:
		d.fail(n, join(path, "unit"), "missing (required unless unlimited: true; one of %s)", strings.Join(envoyUnitNames, ", "))
		return rl
	case !hasUnit:
		return rl
	}
	rl.Unit = unit
	rl.Limit = d.envoyLimit(m, path, rpu, envoyUnits[unit])
	return rl
}

// envoyLimit builds the sluice limit of a rate_limit with a valid unit.
func (d *decoder) envoyLimit(m map[string]*yaml.Node, path string, rpu int64, period time.Duration) limiter.Limit {
	alg := limiter.FixedWindow
	if s, ok := d.scalar(m["algorithm"], join(path, "algorithm"), "an algorithm"); ok {
		a, err := limiter.ParseAlgorithm(s)
		if err != nil {
			names := algorithmNames()
			d.fail(m["algorithm"], join(path, "algorithm"), "unknown algorithm %q (%saccepted: %s)", clip(s), didYouMean(s, names), strings.Join(names, ", "))
			return limiter.Limit{}
		}
		if d.storeType == "gossip" && !gossipAlgorithm(a) {
			d.fail(m["algorithm"], join(path, "algorithm"), "%v is not kept by store type gossip, whose bound holds for counts that add up across instances (accepted: fixed_window or sliding_window; or store type redis for any algorithm)", a)
			return limiter.Limit{}
		}
		alg = a
	}
	burst := d.integer(m["burst"], join(path, "burst"), 1, limiter.MaxBurst, 0, fmt.Sprintf("1 to %d", limiter.MaxBurst))
	if rpu == 0 || d.failed[join(path, "requests_per_unit")] || d.failed[join(path, "burst")] {
		return limiter.Limit{} // requests_per_unit 0: every request is over the limit
	}
	l, err := limiter.New(alg, rpu, period, burst)
	if err != nil {
		var le *limiter.LimitError
		at := "requests_per_unit"
		if errors.As(err, &le) && le.Field == limiter.FieldBurst {
			at = "burst"
		}
		d.fail(m[at], join(path, at), "%s", strings.TrimPrefix(err.Error(), "limiter: "))
	}
	return l
}

// envoyReplaces decodes replaces: a list of {name: NAME}.
func (d *decoder) envoyReplaces(n *yaml.Node, path, self string) []string {
	var out []string
	for i, item := range d.list(n, path, "{name: NAME} entries") {
		p := index(path, i)
		m := d.fields(item, p, "a {name: NAME} entry", []string{"name"})
		name := d.str(m["name"], join(p, "name"), "a name", "")
		switch {
		case d.failed[join(p, "name")] || d.failed[p]:
		case name == "":
			d.fail(item, join(p, "name"), "empty (name the rate_limit this one replaces)")
		case name == self:
			d.fail(m["name"], join(p, "name"), "%q is this rate_limit's own name (a limit cannot replace itself)", clip(name))
		default:
			out = append(out, name)
		}
	}
	return out
}
