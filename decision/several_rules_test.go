package decision_test

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// Several rules at once, each table on both ways of deciding them all or
// nothing (stores): every enforcing rule must allow; a request one of
// them refuses spends nothing of the others (not_spent); a shadow rule's
// denial refuses nothing; a 429's Retry-After is the longest wait of the
// rules that refused it.

// twoRules is "all" (every path, 5 a minute) before "claims" (/claims, 2
// a minute), both per client.
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

type outcomes = map[string]decision.Outcome

// A request that one rule refuses spends nothing of the other rules it
// matched, which report not_spent (never allowed); the next request that
// only they match finds their room as it was.
func TestSeveralRefusedSpendsNothing(t *testing.T) {
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, twoRules(), st)
			for i, s := range []struct {
				path   string
				status int
				want   outcomes
				left   map[string]int64 // RateLimit r per rule
			}{
				{"/claims", 0, outcomes{"all": decision.Allowed, "claims": decision.Allowed}, map[string]int64{"all": 4, "claims": 1}},
				{"/claims", 0, outcomes{"all": decision.Allowed, "claims": decision.Allowed}, map[string]int64{"all": 3, "claims": 0}},
				{"/claims", 429, outcomes{"all": decision.NotSpent, "claims": decision.Limited}, map[string]int64{"all": 3, "claims": 0}},
				{"/claims", 429, outcomes{"all": decision.NotSpent, "claims": decision.Limited}, map[string]int64{"all": 3, "claims": 0}},
				{"/other", 0, outcomes{"all": decision.Allowed}, map[string]int64{"all": 2, "claims": -1}},
			} {
				got := r.do(call{path: s.path, key: "key-a"})
				want(t, got, s.status, fmt.Sprintf("step %d", i))
				if !maps.Equal(got.outcomes(), s.want) {
					t.Errorf("step %d: outcomes %v, want %v", i, got.outcomes(), s.want)
				}
				for rule, n := range s.left {
					if left := remaining(t, got, rule); left != n {
						t.Errorf("step %d: %s has %d left (RateLimit %q), want %d", i, rule, left, got.fields["Ratelimit"], n)
					}
				}
				if s.status == 429 && !slices.Equal(got.violated(), []string{"claims"}) {
					t.Errorf("step %d: violated %q, want [claims]", i, got.violated())
				}
			}
		})
	}
}

// "Partner B notices nothing": partner-a's flood against its own limit
// spends nothing of the service-wide rule partner-b relies on.
func TestSeveralFloodSpendsNoSharedRule(t *testing.T) {
	p := partners()
	p.Plans["large"] = policy.Plan{}
	p.Clients.List[2].Limits = nil
	p.Rules = append(p.Rules, policy.Rule{Name: "service", Key: policy.KeySpec{Kind: policy.KeyGlobal},
		Algorithm: limiter.FixedWindow, Rate: rate(10, time.Minute)})
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, p, st)
			for i := range 20 { // claims 3 a minute: 3 pass, 17 refused
				want(t, r.do(call{key: "key-a"}), map[bool]int{true: 0, false: 429}[i < 3], fmt.Sprintf("partner-a %d", i))
			}
			for i := range 3 {
				s := r.do(call{key: "key-b"})
				want(t, s, 0, fmt.Sprintf("partner-b %d (partner-a's refusals spent the shared rule?)", i))
				if left := remaining(t, s, "service"); left != int64(6-i) {
					t.Errorf("partner-b %d: service has %d left, want %d", i, left, 6-i)
				}
			}
		})
	}
}

// A shadow rule counts and reports its denial (shadow_limited) and
// refuses nothing: it is in no 429's violated-policies nor its
// Retry-After, and no RateLimit field speaks of it. When an enforcing rule
// refuses, the shadow rule still reports its own denial, not the look
// that found no room.
func TestSeveralShadowAmongEnforcing(t *testing.T) {
	p := twoRules() // all 5, claims 2
	p.Rules = append(p.Rules, policy.Rule{Name: "audit", Match: policy.Match{Path: "/claims"}, Mode: policy.Shadow,
		Algorithm: limiter.FixedWindow, Rate: rate(1, time.Hour)})
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, p, st)
			for i, s := range []struct {
				status int
				want   outcomes
			}{
				{0, outcomes{"all": decision.Allowed, "claims": decision.Allowed, "audit": decision.Allowed}},
				{0, outcomes{"all": decision.Allowed, "claims": decision.Allowed, "audit": decision.ShadowLimited}},
				{429, outcomes{"all": decision.NotSpent, "claims": decision.Limited, "audit": decision.ShadowLimited}},
			} {
				got := r.do(call{key: "key-a"})
				want(t, got, s.status, fmt.Sprintf("step %d", i))
				if !maps.Equal(got.outcomes(), s.want) {
					t.Errorf("step %d: outcomes %v, want %v", i, got.outcomes(), s.want)
				}
				if _, ok := items(t, got.fields["Ratelimit"])["audit"]; ok {
					t.Errorf("step %d: RateLimit %q speaks of the shadow rule", i, got.fields["Ratelimit"])
				}
				if s.status == 429 && (!slices.Equal(got.violated(), []string{"claims"}) || got.fields["Retry-After"] != "60") {
					t.Errorf("step %d: violated %q, Retry-After %q; want [claims] and claims' 60, not audit's hour", i, got.violated(), got.fields["Retry-After"])
				}
			}
			// all has spent 2 of 5 (the refused request nothing); this spends a third.
			if s := r.do(call{path: "/other", key: "key-a"}); s.rule(t, "all").Decision.Remaining != 2 {
				t.Errorf("all after two passes, a refusal and this: %+v, want 2 left", s.rule(t, "all"))
			}
		})
	}
}

// Only shadow rules, several of them: they refuse nothing, whatever they
// decide, and spend as they allow.
func TestSeveralShadowsOnly(t *testing.T) {
	p := policy.Policy{Rules: []policy.Rule{
		{Name: "watch-a", Key: policy.KeySpec{Kind: policy.KeyIP}, Mode: policy.Shadow, Algorithm: limiter.FixedWindow, Rate: rate(1, time.Minute)},
		{Name: "watch-b", Key: policy.KeySpec{Kind: policy.KeyIP}, Mode: policy.Shadow, Algorithm: limiter.FixedWindow, Rate: rate(2, time.Minute)},
	}}
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, p, st)
			for i, w := range []outcomes{
				{"watch-a": decision.Allowed, "watch-b": decision.Allowed},
				{"watch-a": decision.ShadowLimited, "watch-b": decision.Allowed},
				{"watch-a": decision.ShadowLimited, "watch-b": decision.ShadowLimited},
			} {
				s := r.do(call{})
				want(t, s, 0, fmt.Sprintf("request %d", i))
				if !maps.Equal(s.outcomes(), w) || s.fields["Ratelimit"] != "" {
					t.Errorf("request %d: outcomes %v, RateLimit %q; want %v and none", i, s.outcomes(), s.fields["Ratelimit"], w)
				}
			}
		})
	}
}

// Every matching enforcing rule must allow: the 429 names each rule that
// refused, in rule order; another client has counters of its own.
func TestSeveralEveryRuleMustAllow(t *testing.T) {
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, twoRules(), st)
			for i, s := range []struct {
				path     string
				status   int
				violated []string
			}{
				{"/claims", 0, nil},                  // all 1, claims 1
				{"/claims/7", 0, nil},                // all 2, claims 2
				{"/claims", 429, []string{"claims"}}, // claims full, all has room
				{"/other", 0, nil},                   // all 3
				{"/other", 0, nil},                   // all 4
				{"/other", 0, nil},                   // all 5
				{"/other", 429, []string{"all"}},
				{"/claims", 429, []string{"all", "claims"}}, // both, in rule order
			} {
				got := r.do(call{path: s.path, key: "key-a"})
				want(t, got, s.status, fmt.Sprintf("step %d %s", i, s.path))
				if !slices.Equal(got.violated(), s.violated) {
					t.Errorf("step %d %s: violated %q, want %q", i, s.path, got.violated(), s.violated)
				}
			}
			want(t, r.do(call{key: "key-b"}), 0, "partner-b")
		})
	}
}

// A 429 refused by several rules waits for the longest of their waits:
// its Retry-After, the detail's rule and wait, Report.RetryAfter and
// Counted and the legacy X-RateLimit-* speak of that rule, whichever
// place it has among the rules and whichever has less remaining.
func TestSeveralRetryAfterIsTheLongest(t *testing.T) {
	hourly := policy.Rule{Name: "hourly", Key: policy.KeySpec{Kind: policy.KeyIP}, Algorithm: limiter.FixedWindow, Rate: rate(4, time.Hour), Cost: 3}
	minute := policy.Rule{Name: "minute", Key: policy.KeySpec{Kind: policy.KeyGlobal}, Algorithm: limiter.FixedWindow, Rate: rate(1, time.Minute)}
	for _, order := range [][]policy.Rule{{hourly, minute}, {minute, hourly}} {
		for name, st := range stores {
			t.Run(order[0].Name+"_first/"+name, func(t *testing.T) {
				r := newRig(t, policy.Policy{Rules: order}, st)
				r.set.LegacyHeaders = true
				want(t, r.do(call{}), 0, "first") // hourly 1 left (cost 3), minute none
				r.clock.Advance(20 * time.Second)
				s := r.do(call{})
				want(t, s, 429, "second")
				if s.fields["Retry-After"] != "3580" || s.rep.RetryAfter != 3580*time.Second {
					t.Errorf("Retry-After %q (report %v), want hourly's 3580, not minute's 40", s.fields["Retry-After"], s.rep.RetryAfter)
				}
				if want := "192.0.2.1 exceeded 4 requests per 1h (rule hourly); retry in 3580s"; s.detail() != want || s.rep.Counted != "192.0.2.1" {
					t.Errorf("detail %q, counted %q; want %q", s.detail(), s.rep.Counted, want)
				}
				got := [3]string{s.fields["X-Ratelimit-Limit"], s.fields["X-Ratelimit-Remaining"], s.fields["X-Ratelimit-Reset"]}
				if got != [3]string{"4", "1", "3580"} {
					t.Errorf("X-RateLimit-Limit/-Remaining/-Reset %q, want hourly's [4 1 3580]", got)
				}
				its := items(t, s.fields["Ratelimit"])
				if its["minute"]["r"] != 0 || its["minute"]["t"] != 40 || its["hourly"]["r"] != 1 || its["hourly"]["t"] != 3580 {
					t.Errorf("RateLimit %q, want minute r=0;t=40 and hourly r=1;t=3580", s.fields["Ratelimit"])
				}
				if v := s.violated(); len(v) != 2 || v[0] != order[0].Name {
					t.Errorf("violated %q, want both in rule order", v)
				}
			})
		}
	}
}

// A passed request's RateLimit-Policy and RateLimit have one item per
// matched enforcing rule, in rule order; shadow rules and rules that
// exempt the caller add none. Legacy headers speak of the tightest rule.
func TestSeveralAllowedHeaders(t *testing.T) {
	p := twoRules()
	p.Rules = append(p.Rules,
		policy.Rule{Name: "watch", Algorithm: limiter.FixedWindow, Rate: rate(1, time.Second), Mode: policy.Shadow},
		policy.Rule{Name: "hourly", Match: policy.Match{Path: "/claims"}, Algorithm: limiter.TokenBucket, Rate: rate(100, time.Hour), Burst: 10},
		policy.Rule{Name: "posts", Match: policy.Match{Methods: []string{"POST"}}, Algorithm: limiter.FixedWindow, Rate: rate(1, time.Second)},
		policy.Rule{Name: "not-b", Match: policy.Match{Path: "/claims"}, Algorithm: limiter.FixedWindow, Rate: rate(1, time.Hour), Allow: []string{"partner-b"}},
	)
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			r := newRig(t, p, st)
			r.set.LegacyHeaders = true
			r.clock.Advance(20*time.Second + 400*time.Millisecond)
			for i, s := range []struct {
				path, key      string
				policy, now    string
				legacy         [3]string
				exemptFromNotB bool
			}{
				{"/claims/7", "key-b", `"all";q=5;w=60, "claims";q=2;w=60, "hourly";q=10;w=360`,
					`"all";r=4;t=40, "claims";r=1;t=40, "hourly";r=9;t=36`, [3]string{"2", "1", "40"}, true},
				{"/other", "key-b", `"all";q=5;w=60`, `"all";r=3;t=40`, [3]string{"5", "3", "40"}, false},
				{"/claims", "key-b", `"all";q=5;w=60, "claims";q=2;w=60, "hourly";q=10;w=360`,
					`"all";r=2;t=40, "claims";r=0;t=40, "hourly";r=8;t=36`, [3]string{"2", "0", "40"}, true},
				{"/claims", "key-a", `"all";q=5;w=60, "claims";q=2;w=60, "hourly";q=10;w=360, "not-b";q=1;w=3600`,
					`"all";r=4;t=40, "claims";r=1;t=40, "hourly";r=9;t=36, "not-b";r=0;t=3580`, [3]string{"1", "0", "3580"}, false},
			} {
				got := r.do(call{path: s.path, key: s.key})
				want(t, got, 0, fmt.Sprintf("step %d", i))
				if got.fields["Ratelimit-Policy"] != s.policy || got.fields["Ratelimit"] != s.now {
					t.Errorf("step %d %s: RateLimit-Policy %q RateLimit %q\nwant %q %q", i, s.path, got.fields["Ratelimit-Policy"], got.fields["Ratelimit"], s.policy, s.now)
				}
				if l := [3]string{got.fields["X-Ratelimit-Limit"], got.fields["X-Ratelimit-Remaining"], got.fields["X-Ratelimit-Reset"]}; l != s.legacy {
					t.Errorf("step %d %s: legacy %q, want %q", i, s.path, l, s.legacy)
				}
				if e := got.outcomes()["not-b"] == decision.Exempt; e != s.exemptFromNotB {
					t.Errorf("step %d: not-b exempt %v, want %v (%v)", i, e, s.exemptFromNotB, got.outcomes())
				}
			}
		})
	}
}

// allowPolicy exempts partner-b and two networks from "claims", not from
// "all".
func allowPolicy() policy.Policy {
	p := twoRules()
	p.Clients.Unknown = policy.UnknownAnonymous
	p.Rules[1].Allow = []string{"partner-b"}
	p.Rules[1].AllowNets = []netip.Prefix{netip.MustParsePrefix("198.51.100.0/24"), netip.MustParsePrefix("2001:db8:aa::/48")}
	return p
}

// A caller a rule's allow list names is never limited by it: the rule
// reports exempt, counts nothing (no counter is made for it), and speaks
// in no RateLimit field; the other rules still apply.
func TestSeveralAllowListExempts(t *testing.T) {
	for _, c := range []struct {
		name   string
		c      call
		exempt bool
	}{
		{"allowed id", call{key: "key-b"}, true},
		{"allowed network, anonymous", call{peer: "198.51.100.7:1"}, true},
		{"allowed network, known client", call{key: "key-a", peer: "198.51.100.7:1"}, true},
		{"allowed IPv6 network", call{peer: "[2001:db8:aa:1::1]:1"}, true},
		{"neither", call{key: "key-a"}, false},
		{"next to the network", call{peer: "198.51.101.7:1"}, false},
	} {
		for name, st := range stores {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				r := newRig(t, allowPolicy(), st)
				for i := range 5 { // all allows 5, claims 2
					s := r.do(c.c)
					if passes := i < 2 || c.exempt; s.pass != passes {
						t.Fatalf("request %d: status %d, want passing %v", i, s.status, passes)
					}
					if got := s.outcomes(); (got["claims"] == decision.Exempt) != c.exempt || len(got) != 2 {
						t.Errorf("request %d: outcomes %v, want all and claims, claims exempt %v", i, got, c.exempt)
					}
					if _, spoke := items(t, s.fields["Ratelimit"])["claims"]; c.exempt && spoke {
						t.Errorf("request %d: RateLimit %q speaks of the rule that exempts the caller", i, s.fields["Ratelimit"])
					}
				}
				if c.exempt {
					if n := r.mem.Len(); n != 1 {
						t.Errorf("%d counters, want 1 (all's): the exempt rule counted", n)
					}
					if s := r.do(c.c); s.pass || !slices.Equal(s.violated(), []string{"all"}) {
						t.Errorf("sixth: pass %v, violated %q; want all's 429", s.pass, s.violated())
					}
				}
			})
		}
	}
}
