package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// envoyRules is a rule file shaped like envoyproxy/ratelimit's examples:
// nested descriptors, a wildcard, unlimited, shadow_mode, replaces and
// detailed_metric, and sluice's algorithm extension.
const envoyRules = `---
domain: rl
descriptors:
  - key: category
    value: account
    rate_limit:
      replaces:
        - name: bkthomps
      unit: minute
      requests_per_unit: 4
  - key: source_cluster
    value: proxy
    descriptors:
      - key: destination_cluster
        value: mock
        rate_limit: {unit: MINUTE, requests_per_unit: 1}
  - key: foo
    rate_limit: {unit: minute, requests_per_unit: 2}
    descriptors:
      - key: bar
        value: bkthomps
        rate_limit: {name: bkthomps, unit: minute, requests_per_unit: 1}
      - key: baz
        value: shady
        shadow_mode: true
        rate_limit: {unit: minute, requests_per_unit: 3}
      - key: bay
        rate_limit: {unlimited: true}
  - key: path
    value: /api/*
    share_threshold: true
    detailed_metric: true
    rate_limit: {unit: second, requests_per_unit: 10, algorithm: gcra, burst: 5}
  - key: banned
    rate_limit: {unit: hour, requests_per_unit: 0}
`

func TestParseEnvoy(t *testing.T) {
	dom, err := ParseEnvoy("rl.yaml", []byte(envoyRules))
	if err != nil {
		t.Fatal(err)
	}
	if dom.Domain != "rl" || len(dom.Descriptors) != 5 {
		t.Fatalf("domain %q with %d descriptors, want rl with 5", dom.Domain, len(dom.Descriptors))
	}
	cat := dom.Descriptors[0]
	if cat.Key != "category" || cat.Value != "account" || cat.RateLimit.Unit != "minute" ||
		cat.RateLimit.RequestsPerUnit != 4 || strings.Join(cat.RateLimit.Replaces, ",") != "bkthomps" {
		t.Errorf("category: %+v %+v", cat, cat.RateLimit)
	}
	if l := cat.RateLimit.Limit; l.Algorithm() != limiter.FixedWindow || l.Rate() != 4 || l.Period() != time.Minute {
		t.Errorf("category limit %v %d/%v, want fixed_window 4/1m", l.Algorithm(), l.Rate(), l.Period())
	}
	if mock := dom.Descriptors[1].Descriptors[0]; mock.RateLimit.Unit != "minute" || mock.Line != 14 {
		t.Errorf("upper-case unit: %+v at line %d", mock.RateLimit, mock.Line)
	}
	foo := dom.Descriptors[2]
	if !foo.Descriptors[1].ShadowMode || !foo.Descriptors[2].RateLimit.Unlimited || foo.Descriptors[0].RateLimit.Name != "bkthomps" {
		t.Errorf("foo's children: %+v", foo.Descriptors)
	}
	path := dom.Descriptors[3]
	if l := path.RateLimit.Limit; !path.ShareThreshold || !path.DetailedMetric || l.Algorithm() != limiter.GCRA || l.Burst() != 5 {
		t.Errorf("path: %+v, limit %v burst %d", path, l.Algorithm(), l.Burst())
	}
	if banned := dom.Descriptors[4].RateLimit; banned.RequestsPerUnit != 0 || banned.Limit != (limiter.Limit{}) {
		t.Errorf("requests_per_unit 0: %+v, want the zero Limit (denies all)", banned)
	}
}

func TestParseEnvoyErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       []string
	}{
		{"empty", "", []string{"e.yaml: empty file (required: domain, descriptors)"}},
		{"no domain", "descriptors: []\n", []string{"e.yaml:1:1: domain: missing (required; such as domain: edge_proxy)"}},
		{"empty domain", "domain: ''\n", []string{"e.yaml:1:9: domain: empty (a domain is the name Envoy's rate_limits use, such as edge_proxy)"}},
		{"unknown top field", "domain: d\ndescriptor: []\n", []string{
			`e.yaml:2:1: unknown field "descriptor" (did you mean "descriptors"? accepted: domain, descriptors)`}},
		{"empty key", "domain: d\ndescriptors:\n  - key: ''\n    value: x\n", []string{
			"e.yaml:3:10: descriptors[0].key: empty (a descriptor key is what Envoy's action sends, such as remote_address)"}},
		{"no key", "domain: d\ndescriptors:\n  - value: x\n", []string{
			"e.yaml:3:5: descriptors[0].key: missing (required; such as key: remote_address)"}},
		{"bad unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: minutes, requests_per_unit: 1}\n", []string{
			`e.yaml:4:24: descriptors[0].rate_limit.unit: unknown unit "minutes" (did you mean "minute"? accepted: second, minute, hour, day, week, month, year)`}},
		{"no unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {requests_per_unit: 1}\n", []string{
			"e.yaml:4:17: descriptors[0].rate_limit.unit: missing (required unless unlimited: true; one of second, minute, hour, day, week, month, year)"}},
		{"unlimited with unit", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unlimited: true, unit: second}\n", []string{
			"e.yaml:4:41: descriptors[0].rate_limit.unit: an unlimited rate_limit takes no unit (remove unit, or unlimited)"}},
		{"duplicate", "domain: d\ndescriptors:\n  - {key: k, value: v}\n  - {key: k, value: v}\n", []string{
			`e.yaml:4:5: descriptors[1]: duplicate descriptor key "k" value "v" (first at line 3)`}},
		{"replaces self", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {name: a, unit: second, requests_per_unit: 1, replaces: [{name: a}]}\n", []string{
			`e.yaml:4:81: descriptors[0].rate_limit.replaces[0].name: "a" is this rate_limit's own name (a limit cannot replace itself)`}},
		{"replaces empty", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, replaces: [{name: ''}]}\n", []string{
			`e.yaml:4:65: descriptors[0].rate_limit.replaces[0].name: empty (name the rate_limit this one replaces)`}},
		{"share_threshold without wildcard", "domain: d\ndescriptors:\n  - {key: k, value: v, share_threshold: true}\n", []string{
			`e.yaml:3:41: descriptors[0].share_threshold: only for a wildcard value (one containing '*'), not "v"`}},
		{"negative rate", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: -1}\n", []string{
			`e.yaml:4:51: descriptors[0].rate_limit.requests_per_unit: -1 is out of range (0 to 4294967295)`}},
		{"rate above sluice's bound", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 4000000000}\n", []string{
			`e.yaml:4:51: descriptors[0].rate_limit.requests_per_unit: rate 4000000000 out of range (1 to 1000000000 per period)`}},
		{"unknown algorithm", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, algorithm: gcr}\n", []string{
			`e.yaml:4:65: descriptors[0].rate_limit.algorithm: unknown algorithm "gcr" (did you mean "gcra"? accepted: fixed_window, sliding_window, sliding_log, token_bucket, gcra, leaky_bucket)`}},
		{"burst on a window", "domain: d\ndescriptors:\n  - key: k\n    rate_limit: {unit: second, requests_per_unit: 1, burst: 3}\n", []string{
			`e.yaml:4:61: descriptors[0].rate_limit.burst: fixed_window takes no burst (got 3; only token_bucket, gcra and leaky_bucket have one)`}},
		{"descriptor not a mapping", "domain: d\ndescriptors: [k]\n", []string{
			`e.yaml:2:15: descriptors[0]: want a descriptor (key, value, rate_limit, descriptors), not a value`}},
		{"unknown descriptor field", "domain: d\ndescriptors:\n  - {key: k, shadowmode: true}\n", []string{
			`e.yaml:3:14: descriptors[0]: unknown field "shadowmode" (did you mean "shadow_mode"? accepted: key, value, rate_limit, descriptors, shadow_mode, quota_mode, detailed_metric, value_to_metric, share_threshold, metadata)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseEnvoy("e.yaml", []byte(tc.text))
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if tc.want == nil { // only that there is an error at a position
				if !strings.HasPrefix(err.Error(), "e.yaml:") {
					t.Fatalf("error %q has no position", err)
				}
				return
			}
			if got := err.Error(); got != strings.Join(tc.want, "\n") {
				t.Errorf("got\n%s\nwant\n%s", got, strings.Join(tc.want, "\n"))
			}
		})
	}
}

func TestLoadEnvoyDirectory(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("a.yaml", "domain: a\ndescriptors: [{key: k, rate_limit: {unit: second, requests_per_unit: 1}}]\n")
	write("b.yml", "domain: b\n")
	write("notes.txt", "not a rule file")
	doms, err := LoadEnvoy([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(doms) != 2 || doms[0].Domain != "a" || doms[1].Domain != "b" {
		t.Fatalf("got %+v, want domains a and b", doms)
	}
	write("c.yaml", "domain: a\n")
	_, err = LoadEnvoy([]string{dir})
	want := filepath.Join(dir, "c.yaml") + `:1:1: domain "a" is already configured at ` + filepath.Join(dir, "a.yaml") + ":1:1 (one file per domain)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %s", err, want)
	}
	if _, err := LoadEnvoy([]string{filepath.Join(dir, "missing")}); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("missing path: %v", err)
	}
}

// TestDecideDocRuleFile: the rule file docs/decide.md shows is read as
// written, with the error it shows for a misspelt unit.
func TestDecideDocRuleFile(t *testing.T) {
	doc, err := os.ReadFile("../docs/decide.md")
	if err != nil {
		t.Fatal(err)
	}
	const mark = "# /etc/ratelimit/config/edge.yaml"
	_, rest, ok := strings.Cut(string(doc), mark)
	if !ok {
		t.Fatalf("docs/decide.md has no block starting %q", mark)
	}
	_, rest, _ = strings.Cut(rest, "\n") // the rest of the comment line
	block, _, _ := strings.Cut(rest, "```")
	dom, err := ParseEnvoy("edge.yaml", []byte(block))
	if err != nil {
		t.Fatal(err)
	}
	if dom.Domain != "edge_proxy" || len(dom.Descriptors) != 4 || dom.Descriptors[3].RateLimit.Limit.Algorithm() != limiter.GCRA {
		t.Errorf("got %+v", dom)
	}
	bad := strings.Replace(block, "unit: minute, requests_per_unit: 100", "unit: minutes, requests_per_unit: 100", 1)
	_, err = ParseEnvoy("edge.yaml", []byte(bad))
	if err == nil || !strings.Contains(string(doc), err.Error()) {
		t.Errorf("the misspelt unit gives %v, which docs/decide.md does not show", err)
	}
}

// TestLoadEnvoyForGossip: rule files decided on the gossip store refuse,
// at file:line:col, the algorithms it does not keep, naming those it does;
// the same files load for any store with LoadEnvoy.
func TestLoadEnvoyForGossip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "edge.yaml")
	text := "domain: edge\ndescriptors:\n  - key: remote_address\n    rate_limit: {unit: minute, requests_per_unit: 10, algorithm: %s}\n" +
		"  - key: path\n    rate_limit: {unit: hour, requests_per_unit: 5}\n"
	gossip := Store{Type: "gossip"}
	for _, tc := range []struct{ alg, err string }{
		{"fixed_window", ""},
		{"sliding_window", ""},
		{"token_bucket", path + ":4:66: descriptors[0].rate_limit.algorithm: token_bucket is not kept by store type gossip, whose bound holds for counts that add up across instances (accepted: fixed_window or sliding_window; or store type redis for any algorithm)"},
		{"sliding_log", path + ":4:66: descriptors[0].rate_limit.algorithm: sliding_log is not kept by store type gossip"},
	} {
		if err := os.WriteFile(path, fmt.Appendf(nil, text, tc.alg), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := LoadEnvoyFor([]string{dir}, gossip)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.alg, err)
		case tc.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.err)):
			t.Errorf("%s: %v\nwant %s", tc.alg, err, tc.err)
		}
		if _, err := LoadEnvoy([]string{dir}); err != nil {
			t.Errorf("%s for any store: %v", tc.alg, err)
		}
		if _, err := LoadEnvoyFor([]string{dir}, Store{Type: "redis"}); err != nil {
			t.Errorf("%s on redis: %v", tc.alg, err)
		}
	}
}
