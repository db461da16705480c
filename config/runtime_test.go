package config

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRuntimeBlock(t *testing.T) {
	f, err := Parse("/etc/sluice/sluice.yaml", []byte(head+"rules: [{name: a, rate: 1/s}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Runtime{File: "/etc/sluice/sluice.runtime.json", Audit: 1000}); f.Runtime != want {
		t.Errorf("runtime = %+v, want the defaults %+v", f.Runtime, want)
	}
	f, err = Parse("/etc/sluice/sluice.yaml", []byte(head+"runtime: {file: state/rt.json, max_ttl: 24h, audit: 50}\nrules: [{name: a, rate: 1/s}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if want := (Runtime{File: filepath.FromSlash("/etc/sluice/state/rt.json"), MaxTTL: 24 * time.Hour, Audit: 50}); f.Runtime != want {
		t.Errorf("runtime = %+v, want %+v", f.Runtime, want)
	}
	var b strings.Builder
	if err := f.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	if line := "runtime overrides: kept in /etc/sluice/state/rt.json; ttl at most 24h0m0s; last 50 changes audited\n"; !strings.Contains(b.String(), line) {
		t.Errorf("summary lacks %q:\n%s", line, b.String())
	}
	if DefaultRuntimeFile("") != "sluice.runtime.json" {
		t.Errorf("DefaultRuntimeFile(\"\") = %q", DefaultRuntimeFile(""))
	}
}

func TestRuntimeErrors(t *testing.T) {
	for _, tc := range []struct{ name, text, want string }{
		{"ttl zero", "runtime: {max_ttl: 0s}\n",
			"t.yaml:3:20: runtime.max_ttl: 0s is out of range (more than 0, at most 8784h (a year))"},
		{"audit zero", "runtime: {audit: 0}\n",
			"t.yaml:3:18: runtime.audit: 0 is out of range (1 to 100000 records; default 1000)"},
		{"file empty", "runtime: {file: ''}\n",
			"t.yaml:3:17: runtime.file: empty (a file path such as /var/lib/sluice/runtime.json, or leave it out: beside the configuration file)"},
		{"unknown field", "runtime: {max_tll: 1h}\n",
			`t.yaml:3:11: runtime: unknown field "max_tll" (did you mean "max_ttl"? accepted: file, max_ttl, audit)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(head+tc.text+"rules: [{name: a, rate: 1/s}]\n"))
			if err == nil || err.Error() != tc.want {
				t.Errorf("got  %v\nwant %s", err, tc.want)
			}
		})
	}
}
