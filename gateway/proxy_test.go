package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestProxyAllowedReachesUpstreamIntact: method, path, query and body arrive
// as sent, the upstream learns the client id, and the answer carries the
// RateLimit headers of the matched rule.
func TestProxyAllowedReachesUpstreamIntact(t *testing.T) {
	h := startGateway(t, standardConfig)
	body := `{"claim":"C-1","note":"ü &?"}`
	r := h.do(h.url, http.MethodPost, "/submit/claims/C-1?expand=notes&x=%2F1", map[string]string{
		"X-API-Key":       keyA,
		"X-Sluice-Client": "partner-b", // forged: must not reach the upstream
		"Content-Type":    "application/json",
	}, body)
	if r.Status != http.StatusOK || r.Body != "upstream ok /submit/claims/C-1" {
		t.Fatalf("got %d %q, want 200 from the upstream", r.Status, r.Body)
	}
	s := h.up.lastSeen(t)
	if s.Method != http.MethodPost || s.Path != "/submit/claims/C-1" || s.RawQuery != "expand=notes&x=%2F1" || s.Body != body {
		t.Errorf("upstream saw %s %s ? %s body %q; want POST /submit/claims/C-1 ? expand=notes&x=%%2F1 body %q",
			s.Method, s.Path, s.RawQuery, s.Body, body)
	}
	if got := s.Header.Values("X-Sluice-Client"); len(got) != 1 || got[0] != "partner-a" {
		t.Errorf("upstream saw X-Sluice-Client %q, want exactly [partner-a]", got)
	}
	if got := s.Header.Get("Content-Type"); got != "application/json" {
		t.Errorf("upstream saw Content-Type %q", got)
	}
	if got, want := r.Header.Get("RateLimit-Policy"), `"submit";q=100;w=60`; got != want {
		t.Errorf("RateLimit-Policy = %q, want %q", got, want)
	}
	if got, want := r.Header.Get("RateLimit"), `"submit";r=99;t=23`; got != want {
		t.Errorf("RateLimit = %q, want %q", got, want)
	}
}

// TestProxyClientHeaderRemovedWithoutID: a caller who has no client id
// (anonymous, or a policy without clients) cannot tell the upstream who it
// is.
func TestProxyClientHeaderRemovedWithoutID(t *testing.T) {
	t.Run("anonymous", func(t *testing.T) {
		cfg := strings.Replace(standardConfig, "unknown: reject", "unknown: anonymous", 1)
		h := startGateway(t, cfg)
		r := h.do(h.url, http.MethodGet, "/claims/1", map[string]string{"X-Sluice-Client": "partner-a"}, "")
		if r.Status != http.StatusOK {
			t.Fatalf("status %d %s", r.Status, r.Body)
		}
		if got := h.up.lastSeen(t).Header.Values("X-Sluice-Client"); len(got) != 1 || got[0] != "anonymous" {
			t.Errorf("upstream saw X-Sluice-Client %q, want [anonymous]", got)
		}
	})
	t.Run("no clients block", func(t *testing.T) {
		h := startGateway(t, "listen: 127.0.0.1:18080\nupstream: {{UPSTREAM}}\nrules:\n  - name: all\n    rate: 100/m\n")
		r := h.do(h.url, http.MethodGet, "/claims/1", map[string]string{"X-Sluice-Client": "partner-a"}, "")
		if r.Status != http.StatusOK {
			t.Fatalf("status %d %s", r.Status, r.Body)
		}
		if got := h.up.lastSeen(t).Header.Values("X-Sluice-Client"); len(got) != 0 {
			t.Errorf("upstream saw X-Sluice-Client %q, want none", got)
		}
	})
}

// TestProxyClientHeaderUnderscoreSpoofRemoved: CGI-style upstreams (WSGI,
// Rack, PHP) read X_Sluice_Client and X-Sluice-Client as the same variable
// (HTTP_X_SLUICE_CLIENT), so a caller-sent underscore variant is a forged
// client id too and must not reach the upstream.
func TestProxyClientHeaderUnderscoreSpoofRemoved(t *testing.T) {
	h := startGateway(t, standardConfig)
	for _, name := range []string{"X_Sluice_Client", "x_sluice-client"} {
		r := h.do(h.url, http.MethodGet, "/claims/1", map[string]string{"X-API-Key": keyA, name: "partner-b"}, "")
		if r.Status != http.StatusOK {
			t.Fatalf("status %d %s", r.Status, r.Body)
		}
		for k, v := range h.up.lastSeen(t).Header {
			if k != "X-Sluice-Client" && strings.EqualFold(strings.ReplaceAll(k, "_", "-"), "X-Sluice-Client") {
				t.Errorf("caller sent %s: partner-b; upstream received %s: %q next to X-Sluice-Client: %q",
					name, k, v, h.up.lastSeen(t).Header.Get("X-Sluice-Client"))
			}
		}
	}
}

// TestProxyLimited: the 101st request of partner-a in the window is answered
// by sluice exactly as DESIGN.md shows, and the upstream is not reached.
func TestProxyLimited(t *testing.T) {
	h := startGateway(t, standardConfig)
	for i := range 100 {
		if r := h.get("/claims/C-1", keyA); r.Status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	before := h.up.hits.Load()
	r := h.get("/claims/C-1", keyA)
	if r.Status != http.StatusTooManyRequests {
		t.Fatalf("status %d, want 429; body %s", r.Status, r.Body)
	}
	if got := h.up.hits.Load(); got != before {
		t.Errorf("upstream hits %d -> %d: a limited request reached the upstream", before, got)
	}
	want := map[string]string{
		"Retry-After":      "23",
		"RateLimit-Policy": `"claims";q=100;w=60`,
		"RateLimit":        `"claims";r=0;t=23`,
		"Cache-Control":    "no-store",
		"Content-Type":     "application/problem+json",
	}
	for k, v := range want {
		if got := r.Header.Values(k); len(got) != 1 || got[0] != v {
			t.Errorf("%s = %q, want [%q]", k, got, v)
		}
	}
	var p map[string]any
	if err := json.Unmarshal([]byte(r.Body), &p); err != nil {
		t.Fatalf("body is not JSON: %v: %s", err, r.Body)
	}
	wantBody := map[string]any{
		"type":              "https://iana.org/assignments/http-problem-types#quota-exceeded",
		"title":             "Too Many Requests",
		"status":            float64(429),
		"detail":            "partner-a exceeded 100 requests per 1m (rule claims); retry in 23s",
		"violated-policies": []any{"claims"},
	}
	for k, v := range wantBody {
		if got, _ := json.Marshal(p[k]); string(got) != mustJSON(v) {
			t.Errorf("body %s = %s, want %s", k, got, mustJSON(v))
		}
	}
	if len(p) != len(wantBody) {
		t.Errorf("body has fields %v, want exactly %d", p, len(wantBody))
	}
	// Partner B notices nothing.
	if r := h.get("/claims/C-1", keyB); r.Status != http.StatusOK {
		t.Errorf("partner-b: %d, want 200", r.Status)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestProxyUnknownKeyRejected: unknown, missing and empty keys get 401 and
// never reach the upstream.
func TestProxyUnknownKeyRejected(t *testing.T) {
	h := startGateway(t, standardConfig)
	cases := map[string]map[string]string{
		"unknown": {"X-API-Key": "no-such-key"},
		"missing": nil,
		"empty":   {"X-API-Key": ""},
	}
	for name, hdr := range cases {
		r := h.do(h.url, http.MethodGet, "/claims/1", hdr, "")
		if r.Status != http.StatusUnauthorized {
			t.Errorf("%s key: status %d, want 401", name, r.Status)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
			t.Errorf("%s key: Content-Type %q, want application/problem+json", name, ct)
		}
	}
	if n := h.up.hits.Load(); n != 0 {
		t.Errorf("upstream reached %d times by unknown callers", n)
	}
}

// TestProxyUpstreamOverloadPassedThrough: the upstream's own 429 and 503
// come back as they were sent.
func TestProxyUpstreamOverloadPassedThrough(t *testing.T) {
	h := startGateway(t, standardConfig)
	cases := []struct {
		path, retry, body, ctype string
		status                   int
	}{
		{"/upstream-429", "7", "upstream says slow down\n", "text/plain", 429},
		{"/upstream-503", "120", `{"upstream":"overloaded"}`, "application/json", 503},
	}
	for _, c := range cases {
		r := h.get(c.path, keyA)
		if r.Status != c.status || r.Body != c.body {
			t.Errorf("%s: got %d %q, want %d %q", c.path, r.Status, r.Body, c.status, c.body)
		}
		if got := r.Header.Values("Retry-After"); len(got) != 1 || got[0] != c.retry {
			t.Errorf("%s: Retry-After %q, want [%s]", c.path, got, c.retry)
		}
		if got := r.Header.Get("Content-Type"); got != c.ctype {
			t.Errorf("%s: Content-Type %q, want %q", c.path, got, c.ctype)
		}
	}
}

// TestProxyUpstreamUnreachable: a closed upstream port gives 502 problem+json.
func TestProxyUpstreamUnreachable(t *testing.T) {
	ln := listen(t)
	closed := "http://" + ln.Addr().String()
	ln.Close()
	cfg := strings.Replace(standardConfig, "upstream: {{UPSTREAM}}", "upstream: "+closed, 1)
	h := startGateway(t, cfg)
	r := h.get("/claims/1", keyA)
	if r.Status != http.StatusBadGateway {
		t.Fatalf("status %d, want 502; body %s", r.Status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	var p struct {
		Status int    `json:"status"`
		Title  string `json:"title"`
	}
	if err := json.Unmarshal([]byte(r.Body), &p); err != nil || p.Status != 502 || p.Title != "Bad Gateway" {
		t.Errorf("body %s (err %v), want a 502 problem", r.Body, err)
	}
	if got := metric(h.metrics(), "sluice_upstream_errors_total"); got != 1 {
		t.Errorf("sluice_upstream_errors_total = %v, want 1", got)
	}
}

// TestProxyShadowRulePasses: over a shadow rule's limit the request still
// passes, and metrics say shadow_limited.
func TestProxyShadowRulePasses(t *testing.T) {
	h := startGateway(t, standardConfig)
	for i := range 3 {
		if r := h.get("/reports/q1", keyA); r.Status != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, r.Status, r.Body)
		}
	}
	if n := h.up.hits.Load(); n != 3 {
		t.Errorf("upstream hits %d, want 3", n)
	}
	m := h.metrics()
	if got := metric(m, "sluice_requests_total", "rule=reports", "client=partner-a", "decision=shadow_limited"); got != 2 {
		t.Errorf("shadow_limited = %v, want 2\n%s", got, m)
	}
	if got := metric(m, "sluice_requests_total", "rule=reports", "client=partner-a", "decision=allowed"); got != 1 {
		t.Errorf("allowed = %v, want 1", got)
	}
}

// TestProxyForwardedFor: from an untrusted peer a forged X-Forwarded-For
// neither changes the ip key nor reaches the upstream; from a trusted proxy
// it names the caller.
func TestProxyForwardedFor(t *testing.T) {
	const byIP = "listen: 127.0.0.1:18080\nupstream: {{UPSTREAM}}\n%s\nrules:\n" +
		"  - name: perip\n    key: ip\n    algorithm: fixed_window\n    rate: 2/m\n"
	t.Run("untrusted", func(t *testing.T) {
		h := startGateway(t, strings.Replace(byIP, "%s", "", 1))
		for i, xff := range []string{"203.0.113.1", "203.0.113.2", "203.0.113.3"} {
			r := h.do(h.url, http.MethodGet, "/x", map[string]string{"X-Forwarded-For": xff}, "")
			want := http.StatusOK
			if i == 2 {
				want = http.StatusTooManyRequests
			}
			if r.Status != want {
				t.Errorf("request %d with X-Forwarded-For %s: %d, want %d", i+1, xff, r.Status, want)
			}
		}
		if got := h.up.lastSeen(t).Header.Values("X-Forwarded-For"); len(got) != 1 || got[0] != "127.0.0.1" {
			t.Errorf("upstream saw X-Forwarded-For %q, want [127.0.0.1]", got)
		}
	})
	t.Run("trusted", func(t *testing.T) {
		h := startGateway(t, strings.Replace(byIP, "%s", "trusted_proxies: [127.0.0.1/32]", 1))
		for _, xff := range []string{"203.0.113.1", "203.0.113.2", "203.0.113.1", "203.0.113.2"} {
			if r := h.do(h.url, http.MethodGet, "/x", map[string]string{"X-Forwarded-For": xff}, ""); r.Status != 200 {
				t.Errorf("X-Forwarded-For %s: %d, want 200 (2/m per caller)", xff, r.Status)
			}
		}
		if got := h.up.lastSeen(t).Header.Get("X-Forwarded-For"); got != "203.0.113.2, 127.0.0.1" {
			t.Errorf("upstream saw X-Forwarded-For %q, want %q", got, "203.0.113.2, 127.0.0.1")
		}
	})
}

// TestProxyForwardedHeaderMode: with forwarded_header: forwarded, a
// trusted proxy's Forwarded names the caller and goes on to the upstream
// with the proxy added; an X-Forwarded-For the caller wrote itself (such a
// proxy passes it through) neither counts nor reaches the upstream.
func TestProxyForwardedHeaderMode(t *testing.T) {
	h := startGateway(t, "listen: 127.0.0.1:18080\nupstream: {{UPSTREAM}}\ntrusted_proxies: [127.0.0.1/32]\n"+
		"forwarded_header: forwarded\nrules:\n  - name: perip\n    key: ip\n    algorithm: fixed_window\n    rate: 2/m\n")
	for i, xff := range []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"} {
		hdr := map[string]string{"Forwarded": "for=203.0.113.9", "X-Forwarded-For": xff}
		want := http.StatusOK
		if i == 2 {
			want = http.StatusTooManyRequests // one caller, 203.0.113.9, whatever X-Forwarded-For says
		}
		if r := h.do(h.url, http.MethodGet, "/x", hdr, ""); r.Status != want {
			t.Errorf("request %d with X-Forwarded-For %s: %d, want %d", i+1, xff, r.Status, want)
		}
	}
	seen := h.up.lastSeen(t).Header
	if got := seen.Values("Forwarded"); len(got) != 2 || got[0] != "for=203.0.113.9" || got[1] != "for=127.0.0.1" {
		t.Errorf("upstream saw Forwarded %q, want [for=203.0.113.9 for=127.0.0.1]", got)
	}
	if got := seen.Values("X-Forwarded-For"); len(got) != 1 || got[0] != "127.0.0.1" {
		t.Errorf("upstream saw X-Forwarded-For %q, want [127.0.0.1] (not the caller's own)", got)
	}
}

// TestProxyForwardedFromUntrustedPeerNotPassedOn: the gateway drops an
// untrusted peer's X-Forwarded-For before proxying; its RFC 7239 Forwarded
// header, which sluice believes only from trusted proxies too, must not
// reach the upstream unchecked either.
func TestProxyForwardedFromUntrustedPeerNotPassedOn(t *testing.T) {
	h := startGateway(t, standardConfig)
	r := h.do(h.url, http.MethodGet, "/claims/1", map[string]string{"X-API-Key": keyA, "Forwarded": "for=10.1.2.3;proto=https"}, "")
	if r.Status != http.StatusOK {
		t.Fatalf("status %d", r.Status)
	}
	if got := h.up.lastSeen(t).Header.Values("Forwarded"); len(got) != 0 {
		t.Errorf("upstream received the untrusted caller's Forwarded: %q", got)
	}
}
