package decision_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/policy"
)

// exhausted is a rig for p with partner-a's 3 a minute on GET /claims used
// up.
func exhausted(t *testing.T, p policy.Policy) *rig {
	t.Helper()
	r := newRig(t, p)
	for range 3 {
		want(t, r.do(call{path: "/claims/1", key: "key-a"}), 0, "GET /claims/1")
	}
	want(t, r.do(call{path: "/claims/1", key: "key-a"}), 429, "the fourth GET /claims/1")
	return r
}

// No spelling of GET escapes a rule naming GET, and the service receives
// the method the rule counted.
func TestSpellingsOfMethods(t *testing.T) {
	r := exhausted(t, partners())
	for _, m := range []string{"get", "Get", "gEt", "head", "Head"} {
		want(t, r.do(call{method: m, path: "/claims/1", key: "key-a"}), 429, m+" from a limited client")
	}
	s := r.do(call{method: "get", path: "/claims/1", key: "key-b"})
	if !s.pass || s.method != "GET" {
		t.Errorf("get from partner-b: pass %v, method %q; want GET passed", s.pass, s.method)
	}
}

// Every spelling of /claims counts on the claims rule, and the service
// receives the path the rule matched (Verdict.Path, DecodedPath).
func TestSpellingsOfPaths(t *testing.T) {
	cases := []struct{ target, path string }{
		{"/claims;x", "/claims"},
		{"/claims;jsessionid=1", "/claims"},
		{"/claims;jsessionid=1/7", "/claims/7"},
		{"/x/..;/claims", "/claims"},
		{"//claims/./7", "/claims/7"},
		{"/%63laims/7", "/claims/7"},
		{"/x/%2e%2e/claims", "/claims"},
		{"/claims/7/..", "/claims/"},
	}
	limited := exhausted(t, partners())
	for _, c := range cases {
		want(t, limited.do(call{path: c.target, key: "key-a"}), 429, "GET "+c.target+" from a limited client")
	}
	roomy := partners()
	roomy.Rules[0].Rate = rate(100, time.Minute)
	r := newRig(t, roomy)
	for _, c := range cases {
		s := r.do(call{path: c.target, key: "key-a"})
		want(t, s, 0, "GET "+c.target)
		if s.path != c.path || s.decodedPath != c.path {
			t.Errorf("GET %s: the service receives %q (decoded %q), want %q", c.target, s.path, s.decodedPath, c.path)
		}
	}
	if n := r.mem.Len(); n != 1 {
		t.Errorf("%d counters, want 1 (partner-a's on claims)", n)
	}
}

// A path upstreams read in different ways is refused, 400 saying so,
// before anything is counted.
func TestSpellingsOfPathsRefused(t *testing.T) {
	r := newRig(t, partners())
	for _, target := range []string{"/claims%3bx", "/claims%3Bjsessionid=1", "/claims%2f7", "/x%2F..%2Fclaims",
		"/claims%5c7", "/claims%253b", "/claims%00", "/claims%23x", "/claims%3fx", "claims"} {
		s := r.do(call{path: target, key: "key-a"})
		want(t, s, 400, "GET "+target)
		if !strings.HasPrefix(s.detail(), "the request path cannot be read one way only") || s.path != "" || len(s.rep.Rules) != 0 {
			t.Errorf("GET %s: detail %q, path %q, rules %+v", target, s.detail(), s.path, s.rep.Rules)
		}
	}
	if n := r.mem.Len(); n != 0 {
		t.Errorf("%d counters, want 0", n)
	}
}

// With case_insensitive_paths, /CLAIMS is /claims to the rules; the
// service receives the path as sent. Without it, /CLAIMS is another path.
func TestSpellingsOfPathsCaseInsensitive(t *testing.T) {
	p := partners()
	p.CaseInsensitivePaths = true
	r := exhausted(t, p)
	for _, target := range []string{"/CLAIMS", "/Claims/1", "/cLaImS;x/1", "/claim%C5%BF"} {
		want(t, r.do(call{path: target, key: "key-a"}), 429, "GET "+target)
	}
	if s := r.do(call{path: "/CLAIMS/Ab", key: "key-b"}); !s.pass || s.path != "/CLAIMS/Ab" {
		t.Errorf("partner-b: pass %v, path %q; want /CLAIMS/Ab passed as sent", s.pass, s.path)
	}
	want(t, exhausted(t, partners()).do(call{path: "/CLAIMS", key: "key-a"}), 0, "GET /CLAIMS, case-sensitive")
}

// Method and path override headers are removed in every spelling: the
// method and path counted are the ones served.
func TestSpellingsOfOverrideHeaders(t *testing.T) {
	r := newRig(t, partners())
	h := hdr{"Accept": {"*/*"}}
	var sent []string
	for _, name := range []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override", "X_http_method_override",
		"X-HTTP-METHOD", "x_method_override", "X_HTTP_METHOD", "X-Original-Url", "X-Rewrite-Url", "X_original_url", "X-REWRITE-URL"} {
		h[name] = []string{"GET"}
		sent = append(sent, name)
	}
	s := r.do(call{method: "PATCH", path: "/claims/1", key: "key-a", h: h})
	want(t, s, 0, "PATCH with overrides")
	if slices.Sort(sent); !slices.Equal(s.removed, sent) {
		t.Errorf("removed %q, want %q", s.removed, sent)
	}
}

// A key header sent twice or holding a list is refused, 400, in both
// modes: never counted anonymous while a key travels on.
func TestSpellingsOfKeyHeaderTwice(t *testing.T) {
	for _, anonymous := range []bool{false, true} {
		p := partners()
		if anonymous {
			p.Clients.Unknown = policy.UnknownAnonymous
		}
		r := newRig(t, p)
		for _, keys := range [][]string{{"key-a", "key-a"}, {"key-a", "key-b"}, {"nope", "key-a"}, {"key-a, key-a"}, {"nope, key-a"}} {
			s := r.do(call{path: "/claims/1", h: hdr{"X-Api-Key": keys}})
			want(t, s, 400, strings.Join(keys, " | "))
			if !strings.Contains(s.detail(), "X-API-Key") || strings.Contains(s.detail(), "key-a") || s.rep.Client != decision.UnknownClient {
				t.Errorf("anonymous %v, keys %q: detail %q, client %q", anonymous, keys, s.detail(), s.rep.Client)
			}
		}
		if n := r.mem.Len(); n != 0 {
			t.Errorf("anonymous %v: %d counters, want 0", anonymous, n)
		}
	}
}

// A respelled key header (X_API_KEY, which CGI-style upstreams read as
// the key) is neither read nor passed on; the key header itself is.
func TestSpellingsOfKeyHeader(t *testing.T) {
	p := anonymousPolicy() // anonymous: 1 a minute
	r := newRig(t, p)
	s := r.do(call{path: "/claims/1", h: hdr{"X_api_key": {"key-a"}, "X-API_KEY": {"key-a"}}})
	if !s.pass || s.client != "anonymous" || !slices.Equal(s.removed, []string{"X-API_KEY", "X_api_key"}) {
		t.Errorf("respelled key: pass %v, client %q, removed %q; want anonymous, both removed", s.pass, s.client, s.removed)
	}
	want(t, r.do(call{path: "/claims/1", h: hdr{"X_api_key": {"key-a"}}}), 429, "respelled key: anonymous, limited")
	s = r.do(call{path: "/claims/1", key: "key-a", h: hdr{"X_api_key": {"key-b"}}})
	if !s.pass || s.client != "partner-a" || !slices.Equal(s.removed, []string{"X_api_key"}) {
		t.Errorf("key and respelling: pass %v, client %q, removed %q; want partner-a, the respelling removed", s.pass, s.client, s.removed)
	}
}
