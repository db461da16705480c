package config

import (
	"strings"
	"testing"
	"time"
)

// TestUpstreamsParsed: names default to the URL's host:port, hosts are
// kept lower-case without a trailing dot, prefixes without their last
// slash; Upstream is the first service; upstream is one service named
// default.
func TestUpstreamsParsed(t *testing.T) {
	f, err := Parse("t.yaml", []byte(`listen: 127.0.0.1:8080
protect: {max_in_flight: 10}
upstreams:
  - {url: http://127.0.0.1:9001, match: {host: "*.Example.com.", path: /r/}}
  - {name: v6, url: "http://[::1]:9002", match: {host: "[::1]"}, timeout: 3s, protect: {max_in_flight: 2}}
  - {url: http://127.0.0.1:9003}
rules: [{name: a, rate: 1/s}]
`))
	if err != nil {
		t.Fatal(err)
	}
	u := f.Upstreams
	if len(u) != 3 || f.Upstream != u[0].URL {
		t.Fatalf("Upstreams %v, Upstream %v", u, f.Upstream)
	}
	if u[0].Name != "127.0.0.1:9001" || u[0].Host != "*.example.com" || u[0].Path != "/r" || u[0].Protect != nil {
		t.Errorf("upstreams[0] = %+v", u[0])
	}
	if u[1].Name != "v6" || u[1].Host != "::1" || u[1].Timeout != 3*time.Second || u[1].Protect == nil || u[1].Protect.MaxInFlight != 2 {
		t.Errorf("upstreams[1] = %+v", u[1])
	}
	if u[2].Host != "" || u[2].Path != "" {
		t.Errorf("upstreams[2] = %+v", u[2])
	}
	var b strings.Builder
	if err := f.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-> 3 upstreams", "upstreams[0] 127.0.0.1:9001: host *.example.com, path /r -> http://127.0.0.1:9001",
		"upstreams[1] v6: host ::1 -> http://[::1]:9002, timeout 3s, its own protect: at most 2 in flight", "upstreams[2] 127.0.0.1:9003: every request"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, b.String())
		}
	}
	one, err := Parse("t.yaml", []byte("listen: 127.0.0.1:8080\nupstream: http://127.0.0.1:9000\nrules: [{name: a, rate: 1/s}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(one.Upstreams) != 1 || one.Upstreams[0].Name != DefaultUpstreamName || one.Upstreams[0].URL != one.Upstream {
		t.Errorf("upstream as Upstreams: %+v", one.Upstreams)
	}
}

func TestHostMatches(t *testing.T) {
	for _, tc := range []struct {
		pattern, host string
		want          bool
	}{
		{"claims.example.com", "claims.example.com", true},
		{"claims.example.com", "Claims.EXAMPLE.com:443", true},
		{"claims.example.com", "claims.example.com.", true},
		{"claims.example.com", "claims.example.com.:80", true},
		{"claims.example.com", "xclaims.example.com", false},
		{"claims.example.com", "claims.example.com.evil", false},
		{"claims.example.com", "", false},
		{"*.example.com", "a.example.com", true},
		{"*.example.com", "a.b.example.com:8443", true},
		{"*.example.com", "example.com", false},
		{"*.example.com", ".example.com", false},
		{"*.example.com", "aexample.com", false},
		{"::1", "[::1]:8080", true},
		{"::1", "[::1]", true},
		{"127.0.0.1", "127.0.0.1:80", true},
	} {
		if got := HostMatches(tc.pattern, tc.host); got != tc.want {
			t.Errorf("HostMatches(%q, %q) = %v, want %v", tc.pattern, tc.host, got, tc.want)
		}
	}
}

// FuzzHostMatches: a "*." pattern never matches its bare name, a match is
// always of a host ending in the pattern's name, and nothing panics.
func FuzzHostMatches(f *testing.F) {
	for _, s := range []string{"example.com", "a.example.com", "A.EXAMPLE.COM.:1", "[::1]:2", "", ".", "..example.com", "x:y:z"} {
		f.Add("*.example.com", s)
		f.Add("example.com", s)
	}
	f.Fuzz(func(t *testing.T, pattern, host string) {
		got := HostMatches(pattern, host)
		h := requestHost(host)
		if name, ok := strings.CutPrefix(pattern, "*."); ok && got && (h == name || !strings.HasSuffix(h, "."+name)) {
			t.Errorf("HostMatches(%q, %q): %q is not below %q", pattern, host, h, name)
		}
		if _, ok := strings.CutPrefix(pattern, "*."); !ok && got && h != pattern {
			t.Errorf("HostMatches(%q, %q) with host %q", pattern, host, h)
		}
	})
}
