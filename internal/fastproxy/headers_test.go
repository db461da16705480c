package fastproxy_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/internal/fastproxy"
)

// TestForwarding: what goes on beside the caller's own fields, and what
// never does, for each forwarding header and trust.
func TestForwarding(t *testing.T) {
	trusted := func(f fastproxy.Forwarding) fastproxy.Forwarding { f.Trusted = true; return f }
	fwd := fastproxy.Forwarding{Forwarded: true}
	cases := []struct {
		name string
		fwd  fastproxy.Forwarding
		send []string
		want map[string][]string // fields as the upstream read them; nil value: absent
	}{
		{"untrusted X-Forwarded-For dropped", xff, []string{"X-Forwarded-For: 203.0.113.7", "Forwarded: for=203.0.113.8"},
			map[string][]string{"X-Forwarded-For": {"127.0.0.1"}, "Forwarded": nil,
				"X-Forwarded-Host": {"x"}, "X-Forwarded-Proto": {"http"}}},
		{"trusted X-Forwarded-For extended", trusted(xff), []string{"X-Forwarded-For: 203.0.113.7", "X-Forwarded-For: 10.0.0.1"},
			map[string][]string{"X-Forwarded-For": {"203.0.113.7, 10.0.0.1, 127.0.0.1"}, "Forwarded": nil}},
		{"caller's X-Forwarded-Host and -Proto replaced", xff, []string{"X-Forwarded-Host: evil", "X-Forwarded-Proto: https"},
			map[string][]string{"X-Forwarded-Host": {"x"}, "X-Forwarded-Proto": {"http"}}},
		{"untrusted Forwarded replaced", fwd, []string{"Forwarded: for=203.0.113.7", "X-Forwarded-For: 203.0.113.8"},
			map[string][]string{"Forwarded": {"for=127.0.0.1"}, "X-Forwarded-For": {"127.0.0.1"}}},
		{"trusted Forwarded extended", trusted(fwd), []string{"Forwarded: for=203.0.113.7", "X-Forwarded-For: 203.0.113.8"},
			map[string][]string{"Forwarded": {"for=203.0.113.7", "for=127.0.0.1"}, "X-Forwarded-For": {"127.0.0.1"}}},
		{"hop-by-hop fields dropped", xff, []string{"Keep-Alive: timeout=5", "Proxy-Connection: keep-alive", "TE: trailers",
			"Proxy-Authorization: Basic eA==", "Upgrade: h2c", "Connection: Upgrade, HTTP2-Settings", "HTTP2-Settings: AAMA"},
			map[string][]string{"Keep-Alive": nil, "Proxy-Connection": nil, "Te": nil, "Proxy-Authorization": nil,
				"Upgrade": nil, "Connection": nil, "Http2-Settings": nil}},
		{"websocket upgrade not sent on", xff, []string{"Connection: upgrade", "Upgrade: websocket"},
			map[string][]string{"Upgrade": nil, "Connection": nil}},
		{"Connection names a field", xff, []string{"Connection: X-Note", "X-Note: a", "X-Other: b"},
			map[string][]string{"X-Note": nil, "X-Other": {"b"}}},
		{"Connection cannot remove a kept field", fastproxy.Forwarding{Kept: []string{"X-Api-Key"}},
			[]string{"Connection: keep-alive, x-api-key, X-Note", "X-API-Key: k", "X-Note: a"},
			map[string][]string{"X-Api-Key": {"k"}, "X-Note": nil}},
		{"Connection names many fields", fastproxy.Forwarding{Kept: []string{"X-Api-Key"}},
			[]string{"Connection: a, b, c, d, e, f, g, h, X-API-KEY, x-note, i", "X-Api-Key: k", "X-Note: a", "X-Other: b"},
			map[string][]string{"X-Api-Key": {"k"}, "X-Note": nil, "X-Other": {"b"}}},
		{"dropped and set fields", fastproxy.Forwarding{
			Strip: []string{"X-Sluice-Client", "X-Http-Method-Override"}, // in every spelling
			Set:   []fastproxy.Field{{Name: "X-Sluice-Client", Value: "partner-b"}}},
			[]string{"X-Sluice-Client: partner-a", "X_Sluice_Client: admin", "X-HTTP-Method-Override: GET"},
			map[string][]string{"X-Sluice-Client": {"partner-b"}, "X_sluice_client": nil, "X-Http-Method-Override": nil}},
		{"Expect not sent on", xff, []string{"Expect: 100-continue", "Content-Length: 0"},
			map[string][]string{"Expect": nil}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			up := newUpstream(t, nil)
			s := startStand(t, mustURL(t, up.URL), standOptions{fwd: c.fwd})
			if got := statuses(s.exchange(t, req("GET /u", c.send...))); !slices.Equal(got, []int{200}) {
				t.Fatalf("statuses %v, want [200]", got)
			}
			h := up.last(t).header
			for name, want := range c.want {
				if got := h[name]; !slices.Equal(got, want) {
					t.Errorf("%s: %q, want %q (all: %v)", name, got, want, h)
				}
			}
		})
	}
}

// TestMethodAndTarget: the method and target Forwarding names go on, with
// the caller's Host.
func TestMethodAndTarget(t *testing.T) {
	up := newUpstream(t, nil)
	s := startStand(t, mustURL(t, up.URL), standOptions{fwd: fastproxy.Forwarding{
		Method: []byte("GET"), URI: []byte("/claims/7?x=1")}})
	c := dial(t, s)
	_, _ = c.Write([]byte(req("get /claims;v=1/7?x=1", "Connection: close")))
	if got := statuses(readReplies(t, bufioReader(c))); !slices.Equal(got, []int{200}) {
		t.Fatalf("statuses %v", got)
	}
	if got := up.last(t); got.line != "GET /claims/7?x=1" || got.host != "x" {
		t.Errorf("upstream got %q host %q", got.line, got.host)
	}
}

// TestResponseFields: the upstream's answer reaches the caller as it came
// (429 and 503 with Retry-After among them), without hop-by-hop fields,
// the fields it named in Connection, or those StripResponse names (in
// any spelling an upstream reads as the same).
func TestResponseFields(t *testing.T) {
	for _, status := range []int{200, 429, 503} {
		up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
			h := w.Header()
			h["Retry-After"] = []string{"7"}
			h["Keep-Alive"] = []string{"timeout=5"}
			h["Connection"] = []string{"X-Hop"}
			h["X-Hop"] = []string{"1"}
			h["Sluice-Loop-Mark"] = []string{"0123456789abcdef0123456789abcdef"}
			h["Sluice_Loop_Mark"] = []string{"0123456789abcdef0123456789abcdef"}
			h["Set-Cookie"] = []string{"a=1", "b=2"}
			w.WriteHeader(status)
			_, _ = w.Write([]byte("answer"))
		})
		s := startStand(t, mustURL(t, up.URL), standOptions{fwd: xff})
		rs := s.exchange(t, req("GET /u"))
		if len(rs) != 1 || rs[0].status != status || rs[0].body != "answer" {
			t.Fatalf("%d: got %+v", status, rs)
		}
		h := rs[0].header
		if h.Get("Retry-After") != "7" || h.Get("Keep-Alive") != "" || h.Get("X-Hop") != "" || h.Get("Sluice-Loop-Mark") != "" {
			t.Errorf("%d: fields %v", status, h)
		}
		for k := range h {
			if strings.EqualFold(strings.ReplaceAll(k, "_", "-"), "Sluice-Loop-Mark") {
				t.Errorf("%d: %s reached the caller", status, k)
			}
		}
		if got := strings.Join(h["Set-Cookie"], " "); got != "a=1 b=2" {
			t.Errorf("%d: Set-Cookie %q, want both", status, got)
		}
	}
}

// TestHead: a HEAD answer keeps the upstream's Content-Length and has no
// body, and the connection stays usable.
func TestHead(t *testing.T) {
	up := newUpstream(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1234")
	})
	s := startStand(t, mustURL(t, up.URL), standOptions{fwd: xff})
	c := dial(t, s)
	_, _ = c.Write([]byte(req("HEAD /u") + req("GET /sentinel", "Connection: close")))
	br := bufioReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "HEAD"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || resp.Header.Get("Content-Length") != "1234" {
		t.Errorf("HEAD: %d, Content-Length %q", resp.StatusCode, resp.Header.Get("Content-Length"))
	}
	if rs := readReplies(t, br); len(rs) != 0 {
		t.Errorf("after HEAD: %+v, want only the sentinel", rs)
	}
}
