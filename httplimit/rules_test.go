package httplimit_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

func TestRuleMatchesPathPrefixOnSegmentBoundaries(t *testing.T) {
	cases := []struct {
		rulePath string
		method   string
		path     string
		match    bool
	}{
		{"/claims", "GET", "/claims", true},
		{"/claims", "GET", "/claims/", true},
		{"/claims", "GET", "/claims/7", true},
		{"/claims", "GET", "/claims/7/documents", true},
		{"/claims", "GET", "/claims?id=7", true},
		{"/claims", "GET", "/claimsx", false},
		{"/claims", "GET", "/claims.json", false},
		{"/claims", "GET", "/claim", false},
		{"/claims", "GET", "/", false},
		{"/claims", "GET", "/other/claims", false},
		{"/claims", "POST", "/claims", false},
		{"/claims", "HEAD", "/claims", true}, // a GET rule covers HEAD
		{"/claims/", "GET", "/claims", true},
		{"/claims/", "GET", "/claims/7", true},
		{"/claims/", "GET", "/claimsx", false},
		{"/", "GET", "/anything/at/all", true},
		{"", "DELETE", "/x", true},
	}
	for _, c := range cases {
		p := partners()
		p.Rules[0].Match.Path = c.rulePath
		if c.rulePath == "" {
			p.Rules[0].Match.Methods = nil
		}
		h := newHarness(t, p)
		w := h.do(req{method: c.method, path: c.path, key: "key-a"})
		wantStatus(t, w, http.StatusOK, c.method+" "+c.path)
		calls, _ := h.store.stats()
		matched := calls == 1 && w.Header().Get("Ratelimit-Policy") != ""
		if matched != c.match {
			t.Errorf("rule %q, %s %s: matched %v, want %v", c.rulePath, c.method, c.path, matched, c.match)
		}
		if rep := h.lastReport(); len(rep.Rules) != boolInt(c.match) {
			t.Errorf("rule %q, %s %s: report has %d rules", c.rulePath, c.method, c.path, len(rep.Rules))
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestRuleMethods(t *testing.T) {
	p := partners()
	p.Rules[0].Match.Methods = []string{"POST", "PUT"}
	h := newHarness(t, p)
	for i := range 5 {
		wantStatus(t, h.do(req{method: "GET", key: "key-a"}), 200, fmt.Sprintf("GET %d (not limited)", i))
	}
	for i := range 3 {
		method := []string{"POST", "PUT"}[i%2]
		wantStatus(t, h.do(req{method: method, key: "key-a"}), 200, fmt.Sprintf("%s %d", method, i))
	}
	wantStatus(t, h.do(req{method: "PUT", key: "key-a"}), 429, "4th write: POST and PUT share the rule")
}

// twoRules is "all" (every path, 5/m) before "claims" (/claims, 2/m), both
// per client.
func twoRules() policy.Policy {
	p := partners()
	p.Plans = map[string]policy.Plan{"standard": {}, "large": {}}
	p.Clients.List[2].Limits = nil
	p.Rules = []policy.Rule{
		{Name: "all", Algorithm: limiter.FixedWindow, Rate: rate(5, time.Minute)},
		{Name: "claims", Match: policy.Match{Path: "/claims"}, Algorithm: limiter.FixedWindow, Rate: rate(2, time.Minute)},
	}
	return p
}

func TestEveryMatchingRuleMustAllow(t *testing.T) {
	h := newHarness(t, twoRules())
	// Whether a request one rule rejects still spends the other rules'
	// units is TestRejectedRequestSpendsNothing's matter: these steps hold
	// either way.
	steps := []struct {
		path     string
		status   int
		violated []string
	}{
		{"/claims", 200, nil},                // all 1, claims 1
		{"/claims/7", 200, nil},              // all 2, claims 2
		{"/claims", 429, []string{"claims"}}, // claims full, all has room
		{"/other", 200, nil},                 // all at most 4
	}
	for i, s := range steps {
		w := h.get(s.path, "key-a")
		what := fmt.Sprintf("step %d %s", i, s.path)
		if s.status == 200 {
			wantStatus(t, w, 200, what)
			continue
		}
		p := readProblem(t, w, 429)
		if !slices.Equal(p.ViolatedPolicies, s.violated) {
			t.Errorf("%s: violated-policies %q, want %q", what, p.ViolatedPolicies, s.violated)
		}
	}
	for i := 0; ; i++ { // fill "all"
		w := h.get("/other", "key-a")
		if w.Code == 200 && i < 2 {
			continue
		}
		if p := readProblem(t, w, 429); !slices.Equal(p.ViolatedPolicies, []string{"all"}) {
			t.Errorf("/other: violated-policies %q, want [all]", p.ViolatedPolicies)
		}
		break
	}
	if p := readProblem(t, h.get("/claims", "key-a"), 429); !slices.Equal(p.ViolatedPolicies, []string{"all", "claims"}) {
		t.Errorf("/claims: violated-policies %q, want [all claims] (both, in rule order)", p.ViolatedPolicies)
	}
	// partner-b has counters of its own.
	wantStatus(t, h.get("/claims", "key-b"), 200, "partner-b")
}

func TestPlanAndClientOverrides(t *testing.T) {
	// claims: 3/m; plan large: 5/m; assessor-c is on plan large with its own 4/m.
	want := map[string]int{"key-a": 3, "key-b": 5, "key-c": 4}
	for key, n := range want {
		h := newHarness(t, partners())
		passed := 0
		for range 8 {
			if h.get("/claims", key).Code == http.StatusOK {
				passed++
			}
		}
		if passed != n {
			t.Errorf("%s: %d of 8 passed, want %d", key, passed, n)
		}
		w := h.get("/claims", key)
		items := mustSFList(t, "RateLimit-Policy", w.Header().Values("Ratelimit-Policy"))
		if len(items) != 1 || items[0].Params["q"] != int64(n) {
			t.Errorf("%s: RateLimit-Policy %q, want q=%d", key, w.Header().Values("Ratelimit-Policy"), n)
		}
	}
}

// allowPolicy exempts partner-b and 198.51.100.0/24 from "claims", but not
// from "all".
func allowPolicy() policy.Policy {
	p := twoRules()
	p.Clients.Unknown = policy.UnknownAnonymous
	p.Rules[1].Allow = []string{"partner-b"}
	p.Rules[1].AllowNets = []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8:aa::/48")}
	return p
}

func TestAllowListIsNeverLimited(t *testing.T) {
	cases := []struct {
		name   string
		q      req
		exempt bool
	}{
		{"allowed id", req{key: "key-b"}, true},
		{"allowed network, anonymous", req{remote: "198.51.100.7:1"}, true},
		{"allowed network, known client", req{key: "key-a", remote: "198.51.100.7:1"}, true},
		{"allowed IPv6 network", req{remote: "[2001:db8:aa:1::1]:1"}, true},
		{"neither", req{key: "key-a"}, false},
		{"next to the network", req{remote: "198.51.101.7:1"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, allowPolicy())
			c.q.path = "/claims"
			for i := range 5 { // "all" allows 5, "claims" 2
				w := h.do(c.q)
				if want := i < 2 || c.exempt; (w.Code == 200) != want {
					t.Fatalf("request %d: status %d, want passing %v", i, w.Code, want)
				}
				rep := h.lastReport()
				if got := outcomes(rep.Report); got["claims"] == httplimit.Exempt != c.exempt || len(got) != 2 {
					t.Errorf("request %d: outcomes %v, want all and claims, claims exempt: %v", i, got, c.exempt)
				}
				if c.exempt && w.Code == 200 {
					items := mustSFList(t, "RateLimit", w.Header().Values("Ratelimit"))
					if len(items) != 1 || items[0].Value != "all" {
						t.Errorf("RateLimit %q, want only rule all", w.Header().Values("Ratelimit"))
					}
				}
			}
			if _, keys := h.store.stats(); c.exempt {
				for _, k := range keys {
					if k.Rule() == "claims" {
						t.Errorf("store asked for the exempt rule: %q", k)
					}
				}
			}
			if c.exempt {
				w := h.do(c.q) // the sixth: "all" still applies
				if p := readProblem(t, w, 429); !slices.Equal(p.ViolatedPolicies, []string{"all"}) {
					t.Errorf("violated-policies %q, want [all]", p.ViolatedPolicies)
				}
			}
		})
	}
}

// containsRule reports whether store key k belongs to rule name (store.Key
// writes the rule first, as its length and a colon).
func containsRule(k, name string) bool {
	prefix := fmt.Sprintf("%d:%s", len(name), name)
	return len(k) >= len(prefix) && k[:len(prefix)] == prefix
}

// outcomes returns the report's outcome per rule name.
func outcomes(rep httplimit.Report) map[string]httplimit.Outcome {
	m := map[string]httplimit.Outcome{}
	for _, r := range rep.Rules {
		m[r.Rule] = r.Outcome
	}
	return m
}

// A request that one rule rejects consumes nothing, under any rule: partner
// a's flood against its own limit must not spend the shared limit that
// partner b relies on ("partner B notices nothing").
func TestRejectedRequestSpendsNothing(t *testing.T) {
	p := partners()
	p.Plans["large"] = policy.Plan{}
	p.Clients.List[2].Limits = nil
	p.Rules = append(p.Rules, policy.Rule{Name: "service", Key: policy.KeySpec{Kind: policy.KeyGlobal},
		Algorithm: limiter.FixedWindow, Rate: rate(10, time.Minute)})
	h := newHarness(t, p)
	for i := range 20 { // partner-a: 3 pass (claims 3/m), 17 are rejected
		w := h.get("/claims", "key-a")
		if want := map[bool]int{true: 200, false: 429}[i < 3]; w.Code != want {
			t.Fatalf("partner-a request %d: status %d, want %d", i, w.Code, want)
		}
	}
	// service has spent 3 of 10: partner-b's 3 (its claims limit) all pass.
	for i := range 3 {
		w := h.get("/claims", "key-b")
		if w.Code != 200 {
			t.Fatalf("partner-b request %d: status %d, want 200 (%s): partner-a's rejected requests spent the shared rule", i, w.Code, w.Body)
		}
	}
}
