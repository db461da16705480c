package policy

import (
	"errors"
	"net/url"
	"path"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestCleanPath: every spelling that an upstream serves as /claims is
// cleaned to /claims (and sent on so); spellings upstreams disagree on are
// refused.
func TestCleanPath(t *testing.T) {
	cases := []struct{ raw, escaped, decoded string }{
		{"", "/", "/"},
		{"/", "/", "/"},
		{"/claims", "/claims", "/claims"},
		{"/claims/", "/claims/", "/claims/"},
		{"/claims/7/documents", "/claims/7/documents", "/claims/7/documents"},
		{"//claims//7", "/claims/7", "/claims/7"},
		{"/claims/./7", "/claims/7", "/claims/7"},
		{"/./claims", "/claims", "/claims"},
		{"/x/../claims", "/claims", "/claims"},
		{"/../../claims", "/claims", "/claims"},
		{"/claims/..", "/", "/"},
		{"/claims/.", "/claims/", "/claims/"},
		{"/a/b/..", "/a/", "/a/"},
		{"/claims;x", "/claims", "/claims"},
		{"/claims;jsessionid=1", "/claims", "/claims"},
		{"/claims;jsessionid=1/7", "/claims/7", "/claims/7"},
		{"/x/..;/claims", "/claims", "/claims"},
		{"/x/..;a=b/claims/", "/claims/", "/claims/"},
		{"/;x/claims", "/claims", "/claims"},
		{"/claims/;x", "/claims/", "/claims/"},
		{"/%63laims", "/claims", "/claims"},
		{"/%63%6C%61%69%6d%73", "/claims", "/claims"},
		{"/x/%2e%2e/claims", "/claims", "/claims"},
		{"/x/.%2E/claims", "/claims", "/claims"},
		{"/claims/%2e", "/claims/", "/claims/"},
		{"/claims%2ejson", "/claims.json", "/claims.json"},
		{"/my%20claims", "/my%20claims", "/my claims"},
		{"/a%21b", "/a%21b", "/a!b"}, // an encoded sub-delimiter stays encoded
		{"/a!b:c@d", "/a!b:c@d", "/a!b:c@d"},
		{"/caf%c3%a9", "/caf%C3%A9", "/café"},
		{"/café", "/caf%C3%A9", "/café"},
		{"/a\"b", "/a%22b", "/a\"b"},
		{"/CLAIMS", "/CLAIMS", "/CLAIMS"}, // case is the upstream's business (CaseInsensitivePaths)
	}
	for _, c := range cases {
		esc, dec, err := CleanPath(c.raw)
		if err != nil || esc != c.escaped || dec != c.decoded {
			t.Errorf("CleanPath(%q) = %q, %q, %v; want %q, %q", c.raw, esc, dec, err, c.escaped, c.decoded)
		}
	}
}

func TestCleanPathRefuses(t *testing.T) {
	cases := []struct{ raw, reason string }{
		{"/claims%2f7", "encoded \"/\" (%2F)"},
		{"/x%2F..%2Fclaims", "(%2F)"},
		{"/claims%3bx", "(%3B)"},
		{"/claims%3Bjsessionid=1", "(%3B)"},
		{"/claims%5c7", "(%5C)"},
		{"/claims\\7", "\"\\\\\""},
		{"/x\\..\\claims", "\"\\\\\""},
		{"/claims%3f", "(%3F)"},
		{"/claims%23", "(%23)"},
		{"/claims#x", "\"#\""},
		{"/claims?x", "\"?\""},
		{"/claims%25", "(%25)"},
		{"/%2563laims", "(%25)"},
		{"/claims%00", "control character (0x00)"},
		{"/claims%0a", "control character (0x0A)"},
		{"/claims\x7f", "control character (0x7F)"},
		{"/claims%", "malformed"},
		{"/claims%4", "malformed"},
		{"/claims%zz", "malformed"},
		{"claims", "no leading '/'"},
		{"*", "no leading '/'"},
	}
	for _, c := range cases {
		esc, dec, err := CleanPath(c.raw)
		var pe *PathError
		if !errors.As(err, &pe) || !strings.Contains(pe.Error(), c.reason) {
			t.Errorf("CleanPath(%q) = %q, %q, %v; want a PathError naming %s", c.raw, esc, dec, err, c.reason)
		}
	}
}

// A clean path costs no allocation.
func TestCleanPathCleanDoesNotAllocate(t *testing.T) {
	n := testing.AllocsPerRun(100, func() {
		if _, _, err := CleanPath("/claims/7/documents"); err != nil {
			t.Fatal(err)
		}
	})
	if n != 0 {
		t.Errorf("%v allocations per clean path, want 0", n)
	}
}

func TestCanonicalMethod(t *testing.T) {
	for in, want := range map[string]string{"GET": "GET", "get": "GET", "gEt": "GET", "Get": "GET",
		"PATCH": "PATCH", "propfind": "PROPFIND", "M-SEARCH": "M-SEARCH"} {
		if got := CanonicalMethod(in); got != want {
			t.Errorf("CanonicalMethod(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPathMatchesFold(t *testing.T) {
	cases := []struct {
		rule, path string
		fold, want bool
	}{
		{"/claims", "/CLAIMS", false, false},
		{"/claims", "/CLAIMS", true, true},
		{"/claims", "/Claims/7", true, true},
		{"/claims", "/claimsx", true, false},
		{"/claims", "/CLAIMSX/7", true, false},
		{"/claims", "/", true, false},
		{"/claims/7", "/CLAIMS/7/x", true, true},
		{"/claims/7", "/CLAIMS", true, false},
		{"/claims", "/claim\u017f", true, true}, // long s: "ſ" upper-cases to "S"
		{"/claıms", "/CLAIMS", true, true},      // dotless i upper-cases to "I"
		{"/claims", "/clai\u0131ms", true, false},
		{"/claims", "/cla\u0131ms", true, true},
		{"/kelvin", "/\u212aelvin", true, true}, // the Kelvin sign lower-cases to "k"
		{"/claims", "/claims\xff", true, false},
		{"/\xff", "/\xff", true, true},
		{"/\xff", "/\xfe", true, false},
		{"/", "/anything", true, true},
	}
	for _, c := range cases {
		if got := pathMatches(c.rule, c.path, c.fold); got != c.want {
			t.Errorf("pathMatches(%q, %q, fold %v) = %v, want %v", c.rule, c.path, c.fold, got, c.want)
		}
	}
}

// upstreams are ways real servers read an escaped path before routing,
// each more lenient than the last in some way. A path CleanPath returns
// must be read by every one of them as the path sluice matched.
var upstreams = map[string]func(string) string{
	// Go's ServeMux, Django, Flask: decode, then resolve dot segments.
	"decode-clean": func(p string) string { return cleanLikeGo(mustUnescape(p)) },
	// Tomcat, Jetty, Spring: drop ;parameters from each segment, decode,
	// resolve dot segments.
	"tomcat": func(p string) string {
		segs := strings.Split(p, "/")
		for i, s := range segs {
			segs[i], _, _ = strings.Cut(s, ";")
		}
		return cleanLikeGo(mustUnescape(strings.Join(segs, "/")))
	},
	// IIS: '\' is '/'.
	"backslash": func(p string) string {
		return cleanLikeGo(strings.ReplaceAll(mustUnescape(p), "\\", "/"))
	},
	// Decoding twice (a proxy that decodes, then a framework that decodes).
	"double-decode": func(p string) string {
		once := mustUnescape(p)
		if twice, err := url.PathUnescape(once); err == nil {
			once = twice
		}
		return cleanLikeGo(once)
	},
	// A server that cuts the path at a decoded '?' or '#'.
	"cut-query": func(p string) string {
		d := mustUnescape(p)
		if i := strings.IndexAny(d, "?#"); i >= 0 {
			d = d[:i]
		}
		return cleanLikeGo(d)
	},
}

func mustUnescape(p string) string {
	d, err := url.PathUnescape(p)
	if err != nil {
		return "\x00unescape failed"
	}
	return d
}

func cleanLikeGo(p string) string {
	c := path.Clean("/" + p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// wideUpstreams are routers that may match less than sluice, never more:
// a rule they apply to a path, sluice applies too (with
// CaseInsensitivePaths for the case-insensitive ones).
var wideUpstreams = map[string]func(rule, path string) bool{
	// Express routes on the path as sent, without decoding.
	"raw": func(rule, p string) bool { return pathMatches(rule, p, false) },
	// Express (path-to-regexp with the i flag: no non-ASCII to ASCII).
	"ascii": func(rule, p string) bool {
		return pathMatches(asciiLower(rule), asciiLower(mustUnescape(p)), false)
	},
	// ASP.NET Core (ordinal ignore case: upper-case each character).
	"upper": func(rule, p string) bool {
		return pathMatches(strings.Map(unicode.ToUpper, rule), strings.Map(unicode.ToUpper, mustUnescape(p)), false)
	},
	// strings.EqualFold, for any router built on it.
	"equalfold": func(rule, p string) bool {
		d := mustUnescape(p)
		rule = strings.TrimSuffix(rule, "/")
		return len(d) >= len(rule) && strings.EqualFold(d[:len(rule)], rule) && (len(d) == len(rule) || d[len(rule)] == '/')
	},
}

func asciiLower(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, s)
}

// FuzzCleanPath: CleanPath never panics; what it returns is clean (cleaning
// it again changes nothing), its escaped form decodes to its decoded form,
// and every modelled upstream reads it as a path the rules match exactly
// as sluice does (routers that match less: never a rule sluice missed).
func FuzzCleanPath(f *testing.F) {
	for _, s := range []string{"/claims", "/CLAIMS", "/claims;x", "/claims;jsessionid=1", "/claims%3bx", "/x/..;/claims",
		"/claims/..", "//claims/./7", "/%63laims", "/x/%2e%2e/claims", "/claims%2f..", "/x\\..\\claims", "/%2563laims",
		"/claim\u017f", "/caf%C3%A9/", "/a%21b", "/claims#x", "/a/b/../../claims", "/.;/claims", "/..%3b/claims"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		esc, dec, err := CleanPath(raw)
		if err != nil {
			var pe *PathError
			if !errors.As(err, &pe) || esc != "" || dec != "" {
				t.Fatalf("CleanPath(%q) = %q, %q, %v: want a *PathError alone", raw, esc, dec, err)
			}
			return
		}
		if esc2, dec2, err := CleanPath(esc); err != nil || esc2 != esc || dec2 != dec {
			t.Fatalf("not idempotent: CleanPath(%q) = %q, %q; again: %q, %q, %v", raw, esc, dec, esc2, dec2, err)
		}
		if u, err := url.PathUnescape(esc); err != nil || u != dec {
			t.Fatalf("CleanPath(%q): escaped %q decodes to %q (%v), decoded is %q", raw, esc, u, err, dec)
		}
		if !utf8.ValidString(esc) || strings.ContainsAny(esc, ";\\#? ") {
			t.Fatalf("CleanPath(%q): escaped %q holds what must be encoded", raw, esc)
		}
		rules := []string{"/claims", "/claims/7", "/a/b", "/", "/my claims", "/café"}
		if seg, _ := cutSegment(dec[1:]); seg != "" {
			rules = append(rules, "/"+seg) // a rule that matches it
		}
		for name, up := range upstreams {
			seen := up(esc)
			for _, r := range rules {
				if got, want := pathMatches(r, dec, false), pathMatches(r, seen, false); got != want {
					t.Errorf("%q: sluice matches %q on %q: %v; upstream %s reads %q: %v", raw, r, dec, got, name, seen, want)
				}
			}
		}
		for name, up := range wideUpstreams {
			for _, r := range append(rules, "/CLAIMS", "/Claims/7", "/claıms") {
				if up(r, esc) && !pathMatches(r, dec, name != "raw") {
					t.Errorf("%q: upstream %s routes %q to rule %q, sluice does not match it", raw, name, esc, r)
				}
			}
		}
	})
}
