package policy_test

import (
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/policy"
)

// FuzzHostPattern: parsing a host pattern never panics; an accepted one
// reads back as itself; "*.x" never matches x itself, and matches any
// name one label below it.
func FuzzHostPattern(f *testing.F) {
	for _, s := range []string{"api.example.com", "*.example.com", "*.Bücher.example.", "a..b", "*", "[::1]", "*.[::1]", "a:80", "xn--bcher-kva.example", "*.*.x"} {
		f.Add(s, "a")
	}
	f.Fuzz(func(t *testing.T, pattern, label string) {
		p, err := policy.ParseHostPattern(pattern)
		if err != nil {
			return
		}
		if again, err := policy.ParseHostPattern(p); err != nil || again != p {
			t.Fatalf("ParseHostPattern(%q) = %q, read back as %q, %v", pattern, p, again, err)
		}
		m := policy.CompileMatch("r", policy.Match{Host: p}, false, func(path, format string, args ...any) {
			t.Fatalf("CompileMatch of an accepted host %q: "+format, append([]any{p}, args...)...)
		})
		name, wild := strings.CutPrefix(p, "*.")
		if got := m.Matches(&policy.Request{Host: name}); got == wild {
			t.Fatalf("%q matches %q: %v", p, name, got)
		}
		below, err := policy.CleanHost(label + "." + name)
		if wild && err == nil && !m.Matches(&policy.Request{Host: below}) {
			t.Fatalf("%q does not match %q", p, below)
		}
	})
}

// FuzzCleanHost: cleaning a request's host never panics, is idempotent,
// and a host matches the exact pattern of itself, however it was spelled.
func FuzzCleanHost(f *testing.F) {
	for _, s := range []string{"API.example.com.:8080", "[2001:DB8::1]:80", "bücher.example", "a..b", ":80", "x:y", "\x00", "ｅｘａｍｐｌｅ.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		h, err := policy.CleanHost(raw)
		if err != nil || h == "" {
			return
		}
		if again, err := policy.CleanHost(h); err != nil || again != h {
			t.Fatalf("CleanHost(%q) = %q, cleaned again %q, %v", raw, h, again, err)
		}
		if strings.HasPrefix(h, "[") {
			return
		}
		p, err := policy.ParseHostPattern(h)
		if err != nil {
			t.Fatalf("the clean host %q is no pattern: %v", h, err)
		}
		m := policy.CompileMatch("r", policy.Match{Host: p}, false, func(string, string, ...any) {})
		if !m.Matches(&policy.Request{Host: h}) {
			t.Fatalf("%q does not match its own pattern %q", h, p)
		}
	})
}

// FuzzMatchPath: a path pattern never panics when compiled or matched;
// a pattern with '*' segments matches the path that puts a segment in
// each, and whatever follows it.
func FuzzMatchPath(f *testing.F) {
	for _, s := range []string{"/claims/*/documents", "/*", "/a/*/", "/a*b", "//*", "/*/*", ""} {
		f.Add(s, "42", "/claims/7/documents/1", false)
	}
	f.Fuzz(func(t *testing.T, pattern, seg, path string, fold bool) {
		bad := false
		m := policy.CompileMatch("r", policy.Match{Path: pattern}, fold, func(string, string, ...any) { bad = true })
		m.Matches(&policy.Request{Path: path, Method: "GET"})
		if bad || seg == "" || strings.ContainsAny(seg, "/*") {
			return
		}
		filled := strings.ReplaceAll(strings.TrimSuffix(pattern, "/"), "*", seg)
		if _, dec, err := policy.CleanPath(filled); err != nil || dec != filled {
			return // seg is no clean segment
		}
		for _, p := range []string{filled, filled + "/x"} {
			if filled == "" {
				p = "/" + strings.TrimPrefix(p, "/")
			}
			if !m.Matches(&policy.Request{Path: p, Method: "GET"}) {
				t.Fatalf("%q does not match %q", pattern, p)
			}
		}
	})
}
