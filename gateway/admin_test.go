package gateway_test

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestAdminMetrics: per rule, client and decision counts, the decision
// histogram and the reload counters are exported; no access key ever
// appears in metrics or logs.
func TestAdminMetrics(t *testing.T) {
	h := startGateway(t, standardConfig)
	for range 101 {
		h.get("/claims/1", keyA)
	}
	h.get("/claims/1", keyB)
	h.get("/reports/1", keyB)
	h.get("/reports/1", keyB)
	h.get("/claims/1", "secret-unknown-key-0d9e31")
	m := h.metrics()
	checks := []struct {
		labels []string
		want   float64
	}{
		{[]string{"rule=claims", "client=partner-a", "decision=allowed"}, 100},
		{[]string{"rule=claims", "client=partner-a", "decision=limited"}, 1},
		{[]string{"rule=claims", "client=partner-b", "decision=allowed"}, 1},
		{[]string{"rule=reports", "client=partner-b", "decision=allowed"}, 1},
		{[]string{"rule=reports", "client=partner-b", "decision=shadow_limited"}, 1},
	}
	for _, c := range checks {
		if got := metric(m, "sluice_requests_total", c.labels...); got != c.want {
			t.Errorf("sluice_requests_total%v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := metric(m, "sluice_decision_seconds_count"); got != 105 {
		t.Errorf("sluice_decision_seconds_count = %v, want 105 (one per request)", got)
	}
	for _, res := range []string{"ok", "failed"} {
		if got := metric(m, "sluice_reloads_total", "result="+res); got != 0 {
			t.Errorf("sluice_reloads_total{result=%q} = %v, want 0", res, got)
		}
	}
	for _, key := range []string{keyA, keyB, "secret-unknown-key-0d9e31"} {
		if strings.Contains(m, key) {
			t.Errorf("access key %q appears in /metrics", key)
		}
		if strings.Contains(h.logs.String(), key) {
			t.Errorf("access key %q appears in the logs", key)
		}
	}
}

// TestAdminMetricsBoundedLabels: callers with made-up keys cannot create
// series.
func TestAdminMetricsBoundedLabels(t *testing.T) {
	h := startGateway(t, standardConfig)
	h.get("/claims/1", "first-unknown")
	before := h.metrics()
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = randomKey()
		if r := h.get("/claims/1", keys[i]); r.Status != http.StatusUnauthorized {
			t.Fatalf("unknown key: %d, want 401", r.Status)
		}
	}
	after := h.metrics()
	if b, a := seriesCount(before, "sluice_"), seriesCount(after, "sluice_"); a != b {
		t.Errorf("sluice_ series: %d before, %d after 1000 unknown keys", b, a)
	}
	logs := h.logs.String()
	for _, k := range keys {
		if strings.Contains(after, k) || strings.Contains(logs, k) {
			t.Fatalf("unknown key %q appears in metrics or logs", k)
		}
	}
	if got := metric(after, "sluice_responses_total", "client=unknown", "code=401"); got != 1001 {
		t.Errorf("sluice_responses_total{client=unknown,code=401} = %v, want 1001", got)
	}
}

func randomKey() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "rk-" + hex.EncodeToString(b)
}

// TestAdminHealth: /healthz and /readyz answer while serving.
func TestAdminHealth(t *testing.T) {
	h := startGateway(t, standardConfig)
	if r := h.admin(http.MethodGet, "/healthz"); r.Status != http.StatusOK {
		t.Errorf("/healthz: %d %s", r.Status, r.Body)
	}
	r := h.admin(http.MethodGet, "/readyz")
	if r.Status != http.StatusOK || !strings.Contains(r.Body, "store:") {
		t.Errorf("/readyz: %d %q, want 200 naming the store", r.Status, r.Body)
	}
}

// lowerLimit is standardConfig with claims at 2/m instead of 100/m.
var lowerLimit = strings.Replace(standardConfig, "    rate: 100/m\n  - name: submit", "    rate: 2/m\n  - name: submit", 1)

// TestAdminReload: a good file is put in force; a broken one is refused
// with file:line:col and the old policy stays.
func TestAdminReload(t *testing.T) {
	h := startGateway(t, standardConfig)
	if got := h.get("/claims/1", keyA).Header.Get("RateLimit-Policy"); got != `"claims";q=100;w=60` {
		t.Fatalf("before reload: RateLimit-Policy %q", got)
	}
	h.writeConfig(lowerLimit)
	if r := h.admin(http.MethodPost, "/reload"); r.Status != http.StatusOK {
		t.Fatalf("POST /reload (good file): %d %s", r.Status, r.Body)
	}
	// The request before the reload counts against 2/m too: one more.
	for i, want := range []int{200, 429} {
		r := h.get("/claims/1", keyA)
		if r.Status != want || r.Header.Get("RateLimit-Policy") != `"claims";q=2;w=60` {
			t.Errorf("after reload, request %d: %d %q, want %d with q=2", i+1, r.Status, r.Header.Get("RateLimit-Policy"), want)
		}
	}
	broken := strings.Replace(standardConfig, "algorithm: fixed_window\n    rate: 100/m", "algorithm: fixed_window\n    rate: 100 per minute", 1)
	h.writeConfig(broken)
	r := h.admin(http.MethodPost, "/reload")
	if r.Status != http.StatusUnprocessableEntity {
		t.Fatalf("POST /reload (broken file): %d %s, want 422", r.Status, r.Body)
	}
	if !regexp.MustCompile(regexp.QuoteMeta(h.path) + `:\d+:\d+: `).MatchString(r.Body) {
		t.Errorf("422 body does not name %s:line:col:\n%s", h.path, r.Body)
	}
	if got := h.get("/claims/1", keyA); got.Status != 429 || got.Header.Get("RateLimit-Policy") != `"claims";q=2;w=60` {
		t.Errorf("after a refused reload: %d %q, want the old policy (429, q=2)", got.Status, got.Header.Get("RateLimit-Policy"))
	}
	m := h.metrics()
	if ok, failed := metric(m, "sluice_reloads_total", "result=ok"), metric(m, "sluice_reloads_total", "result=failed"); ok != 1 || failed != 1 {
		t.Errorf("sluice_reloads_total ok=%v failed=%v, want 1 and 1", ok, failed)
	}
	if r := h.admin(http.MethodGet, "/reload"); r.Status != http.StatusMethodNotAllowed {
		t.Errorf("GET /reload: %d, want 405", r.Status)
	}
}

// TestAdminReloadKeepsCounters: a client at its limit stays limited after
// a reload that leaves its rule unchanged.
func TestAdminReloadKeepsCounters(t *testing.T) {
	h := startGateway(t, lowerLimit)
	h.get("/claims/1", keyA)
	h.get("/claims/1", keyA)
	if r := h.get("/claims/1", keyA); r.Status != http.StatusTooManyRequests {
		t.Fatalf("at the limit: %d, want 429", r.Status)
	}
	// Change something else: one more rule.
	h.writeConfig(lowerLimit + "  - name: other\n    match: { path: /other }\n    rate: 5/m\n")
	if r := h.admin(http.MethodPost, "/reload"); r.Status != http.StatusOK {
		t.Fatalf("reload: %d %s", r.Status, r.Body)
	}
	if r := h.get("/claims/1", keyA); r.Status != http.StatusTooManyRequests {
		t.Errorf("after reloading an unchanged rule: %d, want 429 (counter kept)", r.Status)
	}
	if r := h.get("/other", keyA); r.Status != http.StatusOK || r.Header.Get("RateLimit-Policy") != `"other";q=5;w=60` {
		t.Errorf("new rule: %d %q", r.Status, r.Header.Get("RateLimit-Policy"))
	}
}

// TestAdminReloadLegacyHeaders: legacy_headers is part of what a reload
// puts in force (Reload names only listen, admin and store as needing a
// restart).
func TestAdminReloadLegacyHeaders(t *testing.T) {
	h := startGateway(t, standardConfig)
	if got := h.get("/claims/1", keyA).Header.Get("X-RateLimit-Limit"); got != "" {
		t.Fatalf("X-RateLimit-Limit %q before legacy_headers is on", got)
	}
	h.writeConfig("legacy_headers: true\n" + standardConfig)
	if r := h.admin(http.MethodPost, "/reload"); r.Status != http.StatusOK {
		t.Fatalf("reload: %d %s", r.Status, r.Body)
	}
	if got := h.get("/claims/1", keyA).Header.Get("X-RateLimit-Limit"); got != "100" {
		t.Errorf("after reloading with legacy_headers: true, X-RateLimit-Limit = %q, want 100", got)
	}
}

// TestAdminNotOnCallersPort: admin paths on the callers' port are ordinary
// requests for the upstream.
func TestAdminNotOnCallersPort(t *testing.T) {
	h := startGateway(t, standardConfig)
	for _, p := range []string{"/metrics", "/healthz", "/readyz"} {
		r := h.get(p, keyA)
		if r.Status != http.StatusOK || r.Body != "upstream ok "+p {
			t.Errorf("GET %s on the callers' port: %d %q, want the upstream's answer", p, r.Status, r.Body)
		}
		if r := h.get(p, ""); r.Status != http.StatusUnauthorized {
			t.Errorf("GET %s on the callers' port without a key: %d, want 401", p, r.Status)
		}
	}
	r := h.do(h.url, http.MethodPost, "/reload", map[string]string{"X-API-Key": keyA}, "")
	if r.Body != "upstream ok /reload" {
		t.Errorf("POST /reload on the callers' port: %d %q, want the upstream's answer", r.Status, r.Body)
	}
	if got := metric(h.metrics(), "sluice_reloads_total", "result=ok"); got != 0 {
		t.Errorf("a caller reloaded the configuration: reloads ok = %v", got)
	}
}

// TestAdminReloadNewUpstream: a reload may point the gateway at another
// upstream; requests that start afterwards go there.
func TestAdminReloadNewUpstream(t *testing.T) {
	h := startGateway(t, standardConfig)
	other := newUpstream(t)
	h.get("/claims/1", keyA)
	h.writeConfig(strings.Replace(standardConfig, "upstream: {{UPSTREAM}}", "upstream: "+other.srv.URL, 1))
	if r := h.admin(http.MethodPost, "/reload"); r.Status != http.StatusOK {
		t.Fatalf("reload: %d %s", r.Status, r.Body)
	}
	h.get("/claims/2", keyA)
	if a, b := h.up.hits.Load(), other.hits.Load(); a != 1 || b != 1 {
		t.Errorf("hits: old upstream %d, new upstream %d; want 1 and 1", a, b)
	}
}
