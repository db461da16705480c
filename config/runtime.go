package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Runtime is how the operators' run-time changes are kept (the runtime
// block): overrides, blocks and the degrade switch made through the admin
// API. The block is optional.
type Runtime struct {
	// File is where they are kept with the memory store (runtime.file),
	// so that a restart keeps them; with store: redis they live in Redis
	// and File is unused. Default: beside the configuration file, its
	// name without extension + ".runtime.json" (sluice.yaml:
	// sluice.runtime.json).
	File string
	// MaxTTL, above 0, is the longest ttl a change may have, and makes
	// one required (runtime.max_ttl). Default 0: any ttl, or none (until
	// removed).
	MaxTTL time.Duration
	// Audit is how many audit records are kept (runtime.audit). Default
	// DefaultAudit.
	Audit int
}

// runtime.audit's default and bound (package steering's default is the
// same).
const (
	DefaultAudit = 1000
	MaxAudit     = 100_000
)

// DefaultRuntimeFile is runtime.file's default for the configuration
// file at path.
func DefaultRuntimeFile(path string) string {
	base := filepath.Base(path)
	base = strings.TrimSuffix(base, filepath.Ext(base))
	if path == "" || base == "" || base == "." {
		base = "sluice"
	}
	return filepath.Join(filepath.Dir(path), base+".runtime.json")
}

var runtimeFields = []string{"file", "max_ttl", "audit"}

// runtime decodes the runtime block.
func (d *decoder) runtime(n *yaml.Node, path, file string) Runtime {
	r := Runtime{File: DefaultRuntimeFile(file), Audit: DefaultAudit}
	m := d.fields(n, path, "a mapping ("+strings.Join(runtimeFields, ", ")+")", runtimeFields)
	if f := m["file"]; !isNull(f) {
		if s, ok := d.scalar(f, join(path, "file"), "a file path such as /var/lib/sluice/runtime.json"); ok {
			if s == "" || strings.ContainsRune(s, 0) {
				d.fail(f, join(path, "file"), "empty (a file path such as /var/lib/sluice/runtime.json, or leave it out: beside the configuration file)")
			} else if filepath.IsAbs(s) {
				r.File = s
			} else {
				r.File = filepath.Join(filepath.Dir(file), s) // relative to the configuration file, as envoy_config's paths
			}
		}
	}
	if v, ok := d.durationIn(m["max_ttl"], join(path, "max_ttl"),
		func(v time.Duration) bool { return v > 0 && v <= 366*24*time.Hour },
		"such as 24h; default none", "more than 0, at most 8784h (a year)"); ok {
		r.MaxTTL = v
	}
	r.Audit = int(d.integer(m["audit"], join(path, "audit"), 1, MaxAudit, DefaultAudit,
		fmt.Sprintf("1 to %d records; default %d", MaxAudit, DefaultAudit)))
	return r
}

// summary is check's line for the runtime block, "" for the defaults.
func (r Runtime) summary(f *File) string {
	if r == (Runtime{File: DefaultRuntimeFile(f.Path), Audit: DefaultAudit}) {
		return ""
	}
	where := "in " + r.File
	if f.Store.Type == "redis" {
		where = "in Redis, shared by every instance"
	}
	ttl := "any ttl"
	if r.MaxTTL > 0 {
		ttl = fmt.Sprintf("ttl at most %v", r.MaxTTL)
	}
	return fmt.Sprintf("runtime overrides: kept %s; %s; last %d changes audited\n", where, ttl, r.Audit)
}
