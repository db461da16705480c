package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/policy"
)

// overriddenGateway serves standardConfig with ovs in force on its
// policy, as the runtime store puts them.
func overriddenGateway(t *testing.T, ovs ...policy.Override) *harness {
	t.Helper()
	h := newHarness(t)
	h.writeConfig(standardConfig)
	h.prepare = func(f *config.File) {
		pol, errs := f.Compiled.WithOverrides(ovs)
		if len(errs) > 0 {
			t.Fatalf("overrides[%d]: %v", errs[0].Index, errs[0].Err)
		}
		f.Compiled = pol
	}
	h.serve()
	return h
}

// A blocked client gets 403 problem+json naming it and until when; the
// upstream sees nothing, no rule counts it, the live view does not list
// it as limited, the metrics label it 403 and one line logs it. Another
// client passes.
func TestBlockedAtGateway(t *testing.T) {
	until := start.Add(30 * time.Minute)
	h := overriddenGateway(t, policy.Override{Client: "partner-a", Block: true, Until: until})
	for range 3 {
		r := h.get("/claims/7", keyA)
		if r.Status != http.StatusForbidden || r.Header.Get("Content-Type") != "application/problem+json" ||
			r.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("blocked: %d %v %s", r.Status, r.Header, r.Body)
		}
		var p map[string]any
		if err := json.Unmarshal([]byte(r.Body), &p); err != nil {
			t.Fatalf("body %q: %v", r.Body, err)
		}
		if p["type"] != decision.ProblemBlocked || p["title"] != "Forbidden" || p["status"] != 403.0 ||
			p["detail"] != "partner-a is blocked until 2025-03-14T09:56:37Z" {
			t.Errorf("body %v", p)
		}
	}
	if h.up.hits.Load() != 0 {
		t.Errorf("the upstream received %d requests of a blocked client", h.up.hits.Load())
	}
	if r := h.get("/claims/7", keyB); r.Status != http.StatusOK {
		t.Errorf("partner-b: %d %s, want passed", r.Status, r.Body)
	}
	m := h.metrics()
	if got := metric(m, "sluice_responses_total", "client=partner-a", "code=403"); got != 3 {
		t.Errorf("sluice_responses_total{partner-a,403} = %v, want 3", got)
	}
	if got := metric(m, "sluice_requests_total", "client=partner-a"); got != -1 {
		t.Errorf("sluice_requests_total for partner-a = %v, want no series (no rule counted it)", got)
	}
	if n := h.logs.count(t, "caller blocked"); n != 1 {
		t.Errorf("%d \"caller blocked\" lines, want 1 (once per second per target)", n)
	}
	ov, _ := h.overview()
	claims := overviewRule(t, ov, "claims")
	if claims["limited"] != 0.0 {
		t.Errorf("overview claims limited %v, want 0", claims["limited"])
	}
	for _, e := range claims["top"].([]any) {
		if c := e.(map[string]any); c["client"] == "partner-a" {
			t.Errorf("overview lists the blocked partner-a: %v", c)
		}
	}
	ex := h.admin(http.MethodGet, "/api/v1/explain?path=/claims/7&key="+keyA)
	var got gatewayExplain
	if err := json.Unmarshal([]byte(ex.Body), &got); err != nil || ex.Status != http.StatusOK {
		t.Fatalf("explain: %d %s", ex.Status, ex.Body)
	}
	if got.Would.Status != 403 || got.Would.Detail != "partner-a is blocked until 2025-03-14T09:56:37Z" {
		t.Errorf("explain would %+v, want the 403's detail", got.Would)
	}
}

// A blocked range refuses its callers whoever they are; the explanation
// says so.
func TestBlockedRangeAtGateway(t *testing.T) {
	h := overriddenGateway(t, policy.Override{Addr: netip.MustParsePrefix("127.0.0.0/8"), Block: true})
	r := h.get("/claims/7", keyB)
	if r.Status != http.StatusForbidden || !strings.Contains(r.Body, `"detail":"addresses in 127.0.0.0/8 are blocked until an operator removes the block"`) {
		t.Errorf("a listed client in a blocked range: %d %s", r.Status, r.Body)
	}
	if h.up.hits.Load() != 0 {
		t.Errorf("the upstream received %d requests of a blocked range", h.up.hits.Load())
	}
	if got := metric(h.metrics(), "sluice_responses_total", "client=partner-b", "code=403"); got != 1 {
		t.Errorf("sluice_responses_total{partner-b,403} = %v, want 1", got)
	}
}

// gatewayExplain is the part of /api/v1/explain these tests read.
type gatewayExplain struct {
	Rules []struct {
		Rule   string `json:"rule"`
		Rate   string `json:"rate"`
		Source string `json:"source"`
	} `json:"rules"`
	Would struct {
		Status int    `json:"status"`
		Detail string `json:"detail"`
	} `json:"would"`
}

// The explanation and the counter name an override as the limit's
// source, and sluice_limit has a series for it; the override is
// enforced.
func TestOverrideSourceAtGateway(t *testing.T) {
	h := overriddenGateway(t,
		policy.Override{Client: "partner-a", Rule: "claims", Rate: policy.Rate{N: 2, Period: time.Minute}},
		policy.Override{Addr: netip.MustParsePrefix("127.0.0.0/8"), Rule: "submit", Rate: policy.Rate{N: 3, Period: time.Minute}})
	for _, tt := range []struct{ path, rule, rate, source string }{
		{"/claims/7", "claims", "2/m", "override:partner-a"},
		{"/submit", "submit", "3/m", "override:ip:127.0.0.0/8"},
	} {
		r := h.admin(http.MethodGet, "/api/v1/explain?path="+tt.path+"&ip=127.0.0.1&key="+keyA)
		var ex gatewayExplain
		if err := json.Unmarshal([]byte(r.Body), &ex); err != nil || len(ex.Rules) != 1 {
			t.Fatalf("explain %s: %d %s", tt.path, r.Status, r.Body)
		}
		if got := ex.Rules[0]; got.Rule != tt.rule || got.Rate != tt.rate || got.Source != tt.source {
			t.Errorf("explain %s: %+v, want rule %s at %s from %s", tt.path, got, tt.rule, tt.rate, tt.source)
		}
	}
	r := h.admin(http.MethodGet, "/api/v1/keys?rule=claims&client=partner-a")
	var counter struct{ Rate, Source string }
	if err := json.Unmarshal([]byte(r.Body), &counter); err != nil || counter.Rate != "2/m" || counter.Source != "override:partner-a" {
		t.Errorf("keys: %s, want the override's 2/m as its source", r.Body)
	}
	if got := metric(h.metrics(), "sluice_limit", "rule=claims", "source=override:partner-a"); got != 2 {
		t.Errorf("sluice_limit{claims, override:partner-a} = %v, want 2", got)
	}
	for n, want := range []int{200, 200, 429} {
		if r := h.get("/claims/7", keyA); r.Status != want {
			t.Errorf("request %d: %d, want %d", n+1, r.Status, want)
		}
	}
}
