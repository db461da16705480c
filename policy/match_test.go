package policy_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/policy"
)

// fields is a request's header fields by canonical name.
type fields map[string][]string

func (h fields) Values(dst []string, name string) []string { return append(dst, h[name]...) }

// matcher compiles m, failing the test on any problem.
func matcher(t testing.TB, m policy.Match, fold bool) policy.Matcher {
	t.Helper()
	return policy.CompileMatch("rule", m, fold, func(path, format string, args ...any) {
		t.Fatalf("CompileMatch(%+v): %s: "+format, append([]any{m, path}, args...)...)
	})
}

func TestCleanHost(t *testing.T) {
	for _, tc := range []struct{ raw, want, err string }{
		{"", "", ""},
		{"api.example.com", "api.example.com", ""},
		{"API.Example.COM", "api.example.com", ""},
		{"api.example.com.", "api.example.com", ""},
		{"api.example.com:8443", "api.example.com", ""},
		{"API.example.com.:80", "api.example.com", ""},
		{"api.example.com:", "api.example.com", ""}, // RFC 3986: the port may be empty
		{"192.0.2.7:80", "192.0.2.7", ""},
		{"[2001:DB8::0001]:8080", "[2001:db8::1]", ""},
		{"[::ffff:192.0.2.7]", "[::ffff:192.0.2.7]", ""},
		{"bücher.example", "xn--bcher-kva.example", ""},
		{"BÜCHER.example.", "xn--bcher-kva.example", ""},
		{"XN--BCHER-KVA.example", "xn--bcher-kva.example", ""},
		{"ｅｘａｍｐｌｅ.com", "example.com", ""}, // full-width letters map to ASCII (UTS 46), as a browser resolves them
		{"svc_a.internal", "svc_a.internal", ""},
		{"api.example.com..", "", "empty label"},
		{"api..example.com", "", "empty label"},
		{".example.com", "", "empty label"},
		{".", "", "no name"},
		{":80", "", "no name"},
		{"api.example.com:http", "", "port"},
		{"api.example.com:123456", "", "port"},
		{"2001:db8::1", "", "':'"},
		{"[2001:db8::1", "", "'['"},
		{"[2001:db8::1]x", "", "after its IPv6"},
		{"[192.0.2.7]", "", "IPv6 literal"},
		{"[fe80::1%eth0]", "", "IPv6 literal"},
		{"api example.com", "", "0x20"},
		{"api.example.com/x", "", "'/'"},
		{"user@api.example.com", "", "'@'"},
		{"api%2eexample.com", "", "'%'"},
		{"api.example.com\x00", "", "0x00"},
		{strings.Repeat("a", 64) + ".example", "", "63"},
		{strings.Repeat("a.", 127) + "ab", "", "253"},
	} {
		got, err := policy.CleanHost(tc.raw)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("CleanHost(%q): %v", tc.raw, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("CleanHost(%q) = %q, %v; want an error with %q", tc.raw, got, err, tc.err)
		case tc.err == "" && got != tc.want:
			t.Errorf("CleanHost(%q) = %q, want %q", tc.raw, got, tc.want)
		}
		if he := (*policy.HostError)(nil); err != nil && !errors.As(err, &he) {
			t.Errorf("CleanHost(%q): %T is no *HostError", tc.raw, err)
		}
		if err == nil { // idempotent
			if again, err := policy.CleanHost(got); err != nil || again != got {
				t.Errorf("CleanHost(%q) = %q, %v; want it unchanged", got, again, err)
			}
		}
	}
}

func TestParseHostPattern(t *testing.T) {
	for _, tc := range []struct{ in, want, err string }{
		{"api.example.com", "api.example.com", ""},
		{"API.Example.com.", "api.example.com", ""},
		{"*.example.com", "*.example.com", ""},
		{"*.Example.COM.", "*.example.com", ""},
		{"*.bücher.example", "*.xn--bcher-kva.example", ""},
		{"[2001:db8::1]", "[2001:db8::1]", ""},
		{"", "", "no name"},
		{"*", "", "'*' other than"},
		{"*.", "", "no name"},
		{"*example.com", "", "'*' other than"},
		{"api.*.example.com", "", "'*' other than"},
		{"*.*.example.com", "", "'*' other than"},
		{"api*.example.com", "", "'*' other than"},
		{"a..example.com", "", "empty label"},
		{"api example.com", "", "space"},
		{"api.example.com:8080", "", "port"},
		{"[2001:db8::1]:8080", "", "port"},
		{"*.[2001:db8::1]", "", "IPv6"},
		{"http://api.example.com", "", "path"},
	} {
		got, err := policy.ParseHostPattern(tc.in)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("ParseHostPattern(%q): %v", tc.in, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ParseHostPattern(%q) = %q, %v; want an error with %q", tc.in, got, err, tc.err)
		case got != tc.want:
			t.Errorf("ParseHostPattern(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// host is a request for host (cleaned as a transport's would be).
func host(t *testing.T, raw string) *policy.Request {
	t.Helper()
	h, err := policy.CleanHost(raw)
	if err != nil {
		t.Fatalf("CleanHost(%q): %v", raw, err)
	}
	return &policy.Request{Method: "GET", Path: "/", Host: h}
}

func TestMatchHost(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		yes, no []string
	}{
		{"api.example.com",
			[]string{"api.example.com", "API.EXAMPLE.COM", "Api.Example.Com.", "api.example.com:8443", "api.example.com.:80"},
			[]string{"", "example.com", "x.api.example.com", "api.example.com.evil", "apiexample.com", "api.example.co"}},
		// nginx's server_name *.example.com: any depth below, never the name.
		{"*.example.com",
			[]string{"a.example.com", "A.B.EXAMPLE.COM.", "x-1.example.com:80"},
			[]string{"", "example.com", "EXAMPLE.COM.", "example.com:80", "evilexample.com", "a.example.com.evil", "a.example.org"}},
		{"bücher.example",
			[]string{"bücher.example", "BÜCHER.example", "xn--bcher-kva.example", "XN--BCHER-KVA.EXAMPLE."},
			[]string{"bucher.example", "xn--bcher.example"}},
		{"xn--bcher-kva.example", []string{"bücher.example"}, nil},
		{"*.bücher.example", []string{"a.xn--bcher-kva.example", "a.bücher.example"}, []string{"bücher.example"}},
		{"[2001:db8::1]", []string{"[2001:DB8:0::1]:443"}, []string{"[2001:db8::2]"}},
	} {
		m := matcher(t, policy.Match{Host: tc.pattern}, false)
		for _, h := range tc.yes {
			if !m.Matches(host(t, h)) {
				t.Errorf("host %q does not match %q", h, tc.pattern)
			}
		}
		for _, h := range tc.no {
			if m.Matches(host(t, h)) {
				t.Errorf("host %q matches %q", h, tc.pattern)
			}
		}
	}
}

func TestMatchPathSegments(t *testing.T) {
	for _, tc := range []struct {
		pattern string
		fold    bool
		yes, no []string
	}{
		{"/claims/*/documents", false,
			[]string{"/claims/42/documents", "/claims/42/documents/", "/claims/42/documents/7", "/claims/*/documents"},
			[]string{"/claims/documents", "/claims//documents", "/claims/42/documentsx", "/claims/42/7/documents", "/claims/42", "/Claims/42/documents", "/"}},
		{"/claims/*/documents/", false, []string{"/claims/1/documents"}, []string{"/claims/1"}},
		{"/claims/*", false, []string{"/claims/1", "/claims/1/x"}, []string{"/claims", "/claims/", "/claimsx/1"}},
		{"/*", false, []string{"/a", "/a/b"}, []string{"/"}},
		{"/*/*/x", false, []string{"/a/b/x"}, []string{"/a/x", "/a/b/c"}},
		{"/claims/*/documents", true, []string{"/CLAIMS/42/Documents/7", "/claim%C5%BF/1/documents"}, []string{"/claims/42/docs"}},
	} {
		m := matcher(t, policy.Match{Path: tc.pattern}, tc.fold)
		for _, p := range tc.yes {
			if p == "/claim%C5%BF/1/documents" {
				p = "/claimſ/1/documents" // decoded, as rules see it
			}
			if !m.Matches(&policy.Request{Method: "GET", Path: p}) {
				t.Errorf("path %q does not match %q (fold %v)", p, tc.pattern, tc.fold)
			}
		}
		for _, p := range tc.no {
			if m.Matches(&policy.Request{Method: "GET", Path: p}) {
				t.Errorf("path %q matches %q (fold %v)", p, tc.pattern, tc.fold)
			}
		}
	}
}

func TestMatchHeaders(t *testing.T) {
	env := policy.Match{Headers: []policy.HeaderMatch{{Name: "x-env", Value: "prod"}}}
	debug := policy.Match{Headers: []policy.HeaderMatch{{Name: "X-DEBUG", Present: true}}}
	both := policy.Match{Headers: append(env.Headers, debug.Headers...)}
	for _, tc := range []struct {
		name  string
		m     policy.Match
		h     fields
		match bool
	}{
		{"exact", env, fields{"X-Env": {"prod"}}, true},
		{"value case matters", env, fields{"X-Env": {"Prod"}}, false},
		{"another value", env, fields{"X-Env": {"dev"}}, false},
		{"absent", env, fields{}, false},
		{"no header at all", env, nil, false},
		{"spaces around, trimmed", env, fields{"X-Env": {" prod\t"}}, true},
		{"sent twice: either value matches", env, fields{"X-Env": {"dev", "prod"}}, true},
		{"sent twice, first prod", env, fields{"X-Env": {"prod", "dev"}}, true},
		{"a list", env, fields{"X-Env": {"dev, prod"}}, true},
		{"a list without spaces", env, fields{"X-Env": {"dev,prod"}}, true},
		{"a value holding it", env, fields{"X-Env": {"production"}}, false},
		{"a list of others", env, fields{"X-Env": {"dev, staging"}}, false},
		{"present", debug, fields{"X-Debug": {"1"}}, true},
		{"present, empty", debug, fields{"X-Debug": {""}}, true},
		{"present, absent", debug, fields{"X-Env": {"prod"}}, false},
		{"both", both, fields{"X-Env": {"prod"}, "X-Debug": {"yes"}}, true},
		{"both, one missing", both, fields{"X-Env": {"prod"}}, false},
	} {
		r := &policy.Request{Method: "GET", Path: "/"}
		if tc.h != nil {
			r.Header = tc.h
		}
		m := matcher(t, tc.m, false)
		if got := m.Matches(r); got != tc.match {
			t.Errorf("%s: Matches = %v, want %v", tc.name, got, tc.match)
		}
	}
}

// TestMatchAll: a request must match every field that is set.
func TestMatchAll(t *testing.T) {
	m := matcher(t, policy.Match{Host: "*.example.com", Path: "/claims/*/documents", Methods: []string{"GET"},
		Headers: []policy.HeaderMatch{{Name: "X-Env", Value: "prod"}}}, false)
	ok := policy.Request{Method: "GET", Path: "/claims/1/documents", Host: "a.example.com", Header: fields{"X-Env": {"prod"}}}
	if !m.Matches(&ok) {
		t.Fatal("the request matching every field does not match")
	}
	for name, change := range map[string]func(*policy.Request){
		"method": func(r *policy.Request) { r.Method = "POST" },
		"path":   func(r *policy.Request) { r.Path = "/claims/documents" },
		"host":   func(r *policy.Request) { r.Host = "example.com" },
		"header": func(r *policy.Request) { r.Header = fields{"X-Env": {"dev"}} },
	} {
		r := ok
		change(&r)
		if m.Matches(&r) {
			t.Errorf("another %s matches", name)
		}
	}
	if head := (policy.Request{Method: "HEAD", Path: ok.Path, Host: ok.Host, Header: ok.Header}); !m.Matches(&head) {
		t.Error("HEAD does not match a GET rule")
	}
}

// TestCompiledMatchRequest: the policy's rules, through MatchesHost and
// MatchHeaderNames.
func TestCompiledMatchRequest(t *testing.T) {
	p := policy.Policy{Rules: []policy.Rule{
		{Name: "plain", Match: policy.Match{Path: "/claims"}, Rate: rate(1, 1e9)},
		{Name: "host", Match: policy.Match{Host: "api.example.com"}, Rate: rate(1, 1e9)},
		{Name: "env", Match: policy.Match{Headers: []policy.HeaderMatch{{Name: "x-env", Value: "prod"}, {Name: "X-Env", Value: "prod"}}}, Rate: rate(1, 1e9)},
	}}
	c, err := policy.Compile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !c.MatchesHost() || strings.Join(c.MatchHeaderNames(), ",") != "X-Env" {
		t.Errorf("MatchesHost %v, MatchHeaderNames %q", c.MatchesHost(), c.MatchHeaderNames())
	}
	r := &policy.Request{Method: "GET", Path: "/claims/1", Host: "api.example.com", Header: fields{"X-Env": {"prod"}}}
	if got := c.MatchRequest(r, nil); len(got) != 3 {
		t.Errorf("matched %v, want all three", got)
	}
	if got := c.Match("GET", "/claims/1", nil); len(got) != 1 || got[0] != 0 {
		t.Errorf("Match without host or headers matched %v, want [0]", got)
	}
	p.Rules = p.Rules[:1]
	if c, _ = policy.Compile(p); c.MatchesHost() || c.MatchHeaderNames() != nil {
		t.Error("a policy of paths matches hosts or headers")
	}
}

// TestCompileMatchErrors: every problem is reported at its field.
func TestCompileMatchErrors(t *testing.T) {
	var got []string
	policy.CompileMatch("rules[0]", policy.Match{Host: "a.*.b", Path: "/x/a*", Headers: []policy.HeaderMatch{
		{Name: "X-Env"}, {Name: "Host", Value: "a"}, {Name: "X Y", Value: "a"}, {Name: "X-Sluice-Client", Value: "a"},
		{Name: "X-A", Value: "a\x01"}, {Name: "X-B", Value: " a"}, {Name: "X-C", Present: true}}},
		false, func(path, format string, args ...any) { got = append(got, path) })
	want := "rules[0].match.path rules[0].match.host rules[0].match.headers.X-Env rules[0].match.headers.Host " +
		"rules[0].match.headers.X Y rules[0].match.headers.X-Sluice-Client rules[0].match.headers.X-A rules[0].match.headers.X-B"
	if strings.Join(got, " ") != want {
		t.Errorf("problems at\n\t%s\nwant\n\t%s", strings.Join(got, " "), want)
	}
}
