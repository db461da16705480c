package config

import (
	"slices"

	"github.com/sluice-rl/sluice/policy"
	"go.yaml.in/yaml/v3"
)

// policyFields are the top-level fields of a file's policy part.
var policyFields = []string{"trusted_proxies", "forwarded_header", "ipv6_prefix", "case_insensitive_paths", "clients", "plans", "rules", "time_zone"}

// PolicyFile is the policy part of a configuration file: its rules,
// clients and plans (with trusted_proxies, forwarded_header, ipv6_prefix
// and case_insensitive_paths), what a Go program hands to httplimit. It
// is read by LoadPolicy and ParsePolicy.
type PolicyFile struct {
	// Path is the file's name as given to LoadPolicy or ParsePolicy.
	Path string
	// Policy is the policy as written, with the defaults File.Policy has.
	Policy policy.Policy
	// Compiled is Policy, compiled.
	Compiled *policy.Compiled
	// Warnings are settings that work but are dangerous (every address a
	// trusted proxy), with their positions.
	Warnings Errors
}

// LoadPolicy reads the file at path and parses its policy part, as
// ParsePolicy does.
func LoadPolicy(path string) (*PolicyFile, error) {
	data, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return ParsePolicy(path, data)
}

// ParsePolicy parses and validates the policy part of a configuration:
// rules (required), clients and plans, with every problem reported at
// once as Errors at file:line:col, as Parse reports them. Nothing else is
// required (no listen, no upstream): a rules-only file is whole. The
// gateway's settings (listen, upstream, admin, server, store, protect,
// decide, legacy_headers) may be present, as in a full sluice file, and are
// skipped without being read; any other field is an error.
func ParsePolicy(name string, data []byte) (*PolicyFile, error) {
	root, d, err := parseRoot(name, data, "rules")
	if err != nil {
		return nil, err
	}
	pf := &PolicyFile{Path: name}
	if root.Kind != yaml.MappingNode {
		d.fail(root, "", "the file must be a mapping of settings (clients, plans, rules, ...), not %s", kindName(root))
	} else {
		part := policyPart(root)
		m := d.fields(part, "", "a mapping of settings", policyFields)
		pf.Policy = d.policy(m, part, false)
	}
	if !d.failed[""] {
		c, err := policy.Compile(pf.Policy)
		d.compileErrors(err)
		pf.Compiled = c
	}
	if len(d.errs) > 0 {
		return nil, sortErrors(d.errs)
	}
	pf.Warnings = sortErrors(d.warns)
	return pf, nil
}

// policyPart returns the mapping root without the gateway's settings.
func policyPart(root *yaml.Node) *yaml.Node {
	part := *root
	part.Content = nil
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i]
		if k.Kind == yaml.ScalarNode && slices.Contains(topFields, k.Value) && !slices.Contains(policyFields, k.Value) {
			continue
		}
		part.Content = append(part.Content, k, root.Content[i+1])
	}
	return &part
}
