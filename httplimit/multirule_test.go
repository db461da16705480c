package httplimit_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// TestShadowRuleAmongEnforcingRules has two enforcing rules and a shadow
// one on /claims. The shadow rule's denial stops nothing; when an enforcing
// rule rejects, nothing is spent (the other enforcing rule reports
// not_spent), and the shadow rule still reports its own denial
// (shadow_limited), not the look that found no room.
func TestShadowRuleAmongEnforcingRules(t *testing.T) {
	p := twoRules() // all: 5/m, claims: 2/m
	p.Rules = append(p.Rules, policy.Rule{Name: "audit", Match: policy.Match{Path: "/claims"}, Mode: policy.Shadow,
		Algorithm: limiter.FixedWindow, Rate: rate(1, time.Minute)})
	h := newHarness(t, p)
	steps := []struct {
		status int
		want   map[string]httplimit.Outcome
	}{
		{200, map[string]httplimit.Outcome{"all": httplimit.Allowed, "claims": httplimit.Allowed, "audit": httplimit.Allowed}},
		{200, map[string]httplimit.Outcome{"all": httplimit.Allowed, "claims": httplimit.Allowed, "audit": httplimit.ShadowLimited}},
		{429, map[string]httplimit.Outcome{"all": httplimit.NotSpent, "claims": httplimit.Limited, "audit": httplimit.ShadowLimited}},
	}
	for i, s := range steps {
		w := h.get("/claims", "key-a")
		wantStatus(t, w, s.status, fmt.Sprintf("step %d", i))
		if got := outcomes(h.lastReport().Report); fmt.Sprint(got) != fmt.Sprint(s.want) {
			t.Errorf("step %d: outcomes %v, want %v", i, got, s.want)
		}
	}
	// all has spent 2 of 5 (the rejected request nothing); this spends a third.
	h.get("/other", "key-a")
	if d := h.lastReport().Rules[0].Decision; d.Remaining != 2 {
		t.Errorf("all after two passed requests, one rejected and this one: %+v, want 2 remaining", d)
	}
}

// A request that one rule rejects spends nothing of the other rules it
// matched, and their outcome says so (not_spent, never allowed), whether
// the store decides the rules all or nothing (Redis) or httplimit looks
// first (memory).
func TestRejectedRequestReportsOtherRulesNotSpent(t *testing.T) {
	stores := map[string]func(*testing.T) func(*httplimit.Options){
		"memory": func(*testing.T) func(*httplimit.Options) { return func(*httplimit.Options) {} },
		"redis": func(t *testing.T) func(*httplimit.Options) {
			s := newRedisStore(t, redistest.StartServer(t).Addr)
			return func(o *httplimit.Options) { o.Store = s }
		},
	}
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, twoRules(), open(t)) // all: 5/m, claims: 2/m
			steps := []struct {
				path   string
				status int
				want   map[string]httplimit.Outcome
			}{
				{"/claims", 200, map[string]httplimit.Outcome{"all": httplimit.Allowed, "claims": httplimit.Allowed}},
				{"/claims", 200, map[string]httplimit.Outcome{"all": httplimit.Allowed, "claims": httplimit.Allowed}},
				{"/claims", 429, map[string]httplimit.Outcome{"all": httplimit.NotSpent, "claims": httplimit.Limited}},
				{"/other", 200, map[string]httplimit.Outcome{"all": httplimit.Allowed}},
			}
			for i, s := range steps {
				wantStatus(t, h.get(s.path, "key-a"), s.status, fmt.Sprintf("step %d", i))
				if got := outcomes(h.lastReport().Report); fmt.Sprint(got) != fmt.Sprint(s.want) {
					t.Errorf("step %d: outcomes %v, want %v", i, got, s.want)
				}
			}
			if d := h.lastReport().Rules[0].Decision; d.Remaining != 2 {
				t.Errorf("all after three spent requests: %+v, want 2 remaining (the rejected one spent nothing)", d)
			}
			if httplimit.NotSpent.String() != "not_spent" {
				t.Errorf("NotSpent's label is %q", httplimit.NotSpent)
			}
		})
	}
}
