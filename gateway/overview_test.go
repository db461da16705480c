package gateway_test

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// overview is GET /api/v1/overview, decoded; the raw body too.
func (h *harness) overview() (map[string]any, string) {
	h.t.Helper()
	r := h.admin(http.MethodGet, "/api/v1/overview")
	if r.Status != http.StatusOK || r.Header.Get("Content-Type") != "application/json" {
		h.t.Fatalf("GET /api/v1/overview: %d %s %s", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	var ov map[string]any
	if err := json.Unmarshal([]byte(r.Body), &ov); err != nil {
		h.t.Fatalf("overview %s: %v", r.Body, err)
	}
	return ov, r.Body
}

// overviewRule returns the overview's rule named name.
func overviewRule(t *testing.T, ov map[string]any, name string) map[string]any {
	t.Helper()
	for _, r := range ov["rules"].([]any) {
		if r := r.(map[string]any); r["name"] == name {
			return r
		}
	}
	t.Fatalf("no rule %s in %v", name, ov["rules"])
	return nil
}

// GET /api/v1/overview (issue 16, item 2) names who is limited and who is
// close, per rule, with the contract's fields; no access key appears.
func TestOverview(t *testing.T) {
	h := startGateway(t, standardConfig)
	for range 101 {
		h.get("/claims/1", keyA)
	}
	for range 3 {
		h.get("/claims/1", keyB)
	}
	h.clock.Advance(2 * time.Second)
	ov, body := h.overview()
	for _, key := range []string{keyA, keyB} {
		if strings.Contains(body, key) {
			t.Errorf("access key %q in the overview", key)
		}
	}
	for _, field := range []string{"time", "instance", "period_s", "rules", "findings", "protect", "store", "instances", "history", "signals", "degraded"} {
		if _, ok := ov[field]; !ok {
			t.Errorf("overview lacks %q", field)
		}
	}
	if ov["period_s"] != 600.0 || ov["protect"] != nil || ov["time"] != start.Add(2*time.Second).UTC().Format(time.RFC3339) {
		t.Errorf("period_s %v, protect %v, time %v", ov["period_s"], ov["protect"], ov["time"])
	}
	claims := overviewRule(t, ov, "claims")
	if claims["limit"] != 100.0 || claims["window_s"] != 60.0 || claims["algorithm"] != "fixed_window" || claims["mode"] != "enforce" ||
		claims["key"] != "client" || claims["allowed"] != 103.0 || claims["limited"] != 1.0 {
		t.Errorf("claims %v", claims)
	}
	top := claims["top"].([]any)
	if len(top) != 2 {
		t.Fatalf("claims top %v, want partner-a and partner-b", top)
	}
	a, b := top[0].(map[string]any), top[1].(map[string]any)
	if a["client"] != "partner-a" || a["counted"] != "partner-a" || a["limit"] != 100.0 || a["allowed"] != 100.0 ||
		a["limited"] != 1.0 || a["retry_s"].(float64) < 1 || a["retry_s"].(float64) > 60 || a["used"].(float64) < 0.85 {
		t.Errorf("partner-a %v", a)
	}
	if b["client"] != "partner-b" || b["limit"] != 1000.0 || b["limited"] != 0.0 || b["used"].(float64) <= 0 || b["used"].(float64) > 0.01 {
		t.Errorf("partner-b (plan large, 1000/m) %v", b)
	}
	store := ov["store"].(map[string]any)
	if store["type"] != "memory" || store["state"] != "local" || store["shared"] != false || store["on_failure"] != "open" ||
		!strings.Contains(store["note"].(string), "its own") {
		t.Errorf("store %v", store)
	}
	inst := ov["instance"].(map[string]any)
	insts := ov["instances"].([]any)
	if len(insts) != 1 || insts[0].(map[string]any)["self"] != true || insts[0].(map[string]any)["id"] != inst["id"] ||
		len(inst["version"].(string)) != 8 {
		t.Errorf("instance %v, instances %v", inst, insts)
	}
	hist := ov["history"].([]any)
	if len(hist) != 300 {
		t.Fatalf("%d history points, want 300", len(hist))
	}
	var allowed float64
	for _, p := range hist {
		allowed += p.(map[string]any)["rules"].(map[string]any)["claims"].(map[string]any)["allowed"].(float64)
	}
	if allowed != 103 {
		t.Errorf("history counts %v allowed on claims, want 103", allowed)
	}
	if f := ov["findings"].([]any); len(f) != 0 {
		t.Errorf("findings %v, want none", f)
	}
}

// A reload keeps what was seen of an unchanged rule; a changed live block
// starts afresh, and the configuration's version changes with the file.
func TestOverviewReload(t *testing.T) {
	h := startGateway(t, standardConfig)
	h.get("/claims/1", keyA)
	ov, _ := h.overview()
	version := ov["instance"].(map[string]any)["version"]
	h.writeConfig(strings.Replace(standardConfig, "rate: 1/m", "rate: 2/m", 1))
	if r := h.admin(http.MethodPost, "/reload"); r.Status != 200 {
		t.Fatalf("reload: %d %s", r.Status, r.Body)
	}
	ov, _ = h.overview()
	if top := overviewRule(t, ov, "claims")["top"].([]any); len(top) != 1 {
		t.Errorf("after a reload claims lists %v, want partner-a kept", top)
	}
	if ov["instance"].(map[string]any)["version"] == version {
		t.Errorf("version %v unchanged by a changed file", version)
	}
	h.writeConfig(standardConfig + "live: {top: 5, period: 1h}\n")
	if r := h.admin(http.MethodPost, "/reload"); r.Status != 200 {
		t.Fatalf("reload: %d %s", r.Status, r.Body)
	}
	ov, _ = h.overview()
	if top := overviewRule(t, ov, "claims")["top"].([]any); len(top) != 0 || ov["period_s"] != 3600.0 {
		t.Errorf("after a new live block: claims lists %v, period %v; want none and 3600", top, ov["period_s"])
	}
}

// With protect, the overview shows its throttle, and the history its
// in-flight count as sampled every second.
func TestOverviewProtect(t *testing.T) {
	h := newHarness(t)
	h.writeConfig(protectConfig("{{UPSTREAM}}", "protect: {max_in_flight: 40, queue: {max_wait: 1s, max_length: 100}}"))
	h.serve()
	h.get("/claims/1", keyA)
	eventually(t, "a sample of protect in the history", func() bool {
		h.clock.Advance(time.Second)
		ov, _ := h.overview()
		hist := ov["history"].([]any)
		return hist[len(hist)-1].(map[string]any)["ceiling"] == 40.0 || hist[len(hist)-2].(map[string]any)["ceiling"] == 40.0
	})
	ov, _ := h.overview()
	p, ok := ov["protect"].(map[string]any)
	if !ok || p["ceiling"] != 40.0 || p["limit"] != 40.0 || p["queue_max"] != 100.0 || p["in_flight"] != 0.0 {
		t.Fatalf("protect %v", ov["protect"])
	}
	shed := p["shed"].(map[string]any)
	for _, pr := range []string{"low", "normal", "high", "critical"} {
		if shed[pr] != 0.0 {
			t.Errorf("shed %v, want 0 for each priority", shed)
		}
	}
}

// An attacker (issue 16, item 1: bounded live state) who sends a new
// value of a counted header, or of the access key's header, with each
// request grows no list in the overview beyond 2×live.top; no value sent
// in the access key's header is shown (a partner's key, made-up keys),
// nor a key sent as another header's value. (A tenant header's own
// values are shown, as a 429's detail shows them.)
func TestOverviewAttackBounded(t *testing.T) {
	h := startGateway(t, `listen: 127.0.0.1:18080
upstream: {{UPSTREAM}}
admin: 127.0.0.1:18090
live: {top: 5}
clients:
  unknown: anonymous
  list:
    - {id: partner-a, keys: [`+keyA+`]}
rules:
  - name: tenant
    key: header:X-Tenant
    rate: 1/m
  - name: by-key
    key: header:X-API-Key
    rate: 1/m
`)
	for i := range 300 {
		n := strconv.Itoa(i)
		h.do(h.url, http.MethodGet, "/x", map[string]string{"X-Tenant": "tenant-" + n, "X-API-Key": "attacker-key-" + n}, "")
		h.do(h.url, http.MethodGet, "/x", map[string]string{"X-Tenant": keyA, "X-API-Key": keyA}, "")
	}
	ov, body := h.overview()
	for _, name := range []string{"tenant", "by-key"} {
		if top := overviewRule(t, ov, name)["top"].([]any); len(top) > 10 || len(top) == 0 {
			t.Errorf("rule %s lists %d callers, want 1 to 10", name, len(top))
		}
	}
	if strings.Contains(body, "attacker-key") || strings.Contains(body, keyA) {
		t.Errorf("the overview shows a header value or key: %s", body[:min(len(body), 2000)])
	}
}

// The metrics of issue 16, item 7: the share of the limit used per rule
// and listed client (callers without an id as one series, anonymous), the
// findings per kind, and the configured limit per rule and source.
func TestLiveMetrics(t *testing.T) {
	h := startGateway(t, strings.Replace(standardConfig, "unknown: reject", "unknown: anonymous", 1))
	for range 120 { // 100 pass, then 20 at once, before the Retry-After
		h.get("/claims/1", keyA)
	}
	h.get("/claims/1", keyB)
	for i := range 50 {
		h.get("/claims/1", "made-up-key-"+strconv.Itoa(i))
	}
	m := h.metrics()
	if got := metric(m, "sluice_limit_used_ratio", "rule=claims", "client=partner-a"); got < 0.85 || got > 1 {
		t.Errorf("partner-a uses %v of claims, want about 1", got)
	}
	if got := metric(m, "sluice_limit_used_ratio", "rule=claims", "client=partner-b"); got <= 0 || got > 0.01 {
		t.Errorf("partner-b uses %v of claims (1 of 1000), want 0.001", got)
	}
	if got := metric(m, "sluice_limit_used_ratio", "rule=claims", "client=anonymous"); got < 0.45 || got > 0.55 {
		t.Errorf("anonymous callers use %v of claims (one address, 50 requests), want about 0.5", got)
	}
	if n := seriesCount(m, "sluice_limit_used_ratio{"); n != 3 {
		t.Errorf("%d used series, want 3 (partner-a, partner-b, anonymous):\n%s", n, m)
	}
	for kind, want := range map[string]float64{"retries_too_soon": 1, "limit_too_low": 0, "shared_address": 0, "separate_counters": 0} {
		if got := metric(m, "sluice_findings", "kind="+kind); got != want {
			t.Errorf("sluice_findings{kind=%s} = %v, want %v", kind, got, want)
		}
	}
	for _, c := range []struct {
		rule, source string
		want         float64
	}{{"claims", "rule", 100}, {"claims", "plan:large", 1000}, {"submit", "rule", 100}, {"reports", "rule", 1}} {
		if got := metric(m, "sluice_limit", "rule="+c.rule, "source="+c.source); got != c.want {
			t.Errorf("sluice_limit{rule=%s,source=%s} = %v, want %v", c.rule, c.source, got, c.want)
		}
	}
	if strings.Contains(m, "made-up-key") {
		t.Error("a made-up key appears in /metrics")
	}
}
