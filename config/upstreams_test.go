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
	if u[1].Name != "v6" || u[1].Host != "[::1]" || u[1].Timeout != 3*time.Second || u[1].Protect == nil || u[1].Protect.MaxInFlight != 2 {
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
		"upstreams[1] v6: host [::1] -> http://[::1]:9002, timeout 3s, its own protect: at most 2 in flight", "upstreams[2] 127.0.0.1:9003: every request"} {
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
