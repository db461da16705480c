package decision_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
)

// overridden is a policy with a rule of each key on /claims, each 10
// requests a minute, for partner-a and partner-b and anonymous callers,
// behind the trusted proxies 10.0.0.0/8.
func overridden(t testing.TB) *policy.Compiled {
	t.Helper()
	rule := func(name string, key policy.KeySpec) policy.Rule {
		return policy.Rule{Name: name, Match: policy.Match{Path: "/claims"}, Key: key, Algorithm: limiter.FixedWindow,
			Rate: policy.Rate{N: 10, Period: time.Minute}}
	}
	pol, err := policy.Compile(policy.Policy{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		Clients: policy.Clients{Unknown: policy.UnknownAnonymous, List: []policy.Client{
			{ID: "partner-a", Keys: []string{"key-a"}}, {ID: "partner-b", Keys: []string{"key-b"}}}},
		Rules: []policy.Rule{
			rule("claims", policy.KeySpec{Kind: policy.KeyClient}),
			rule("by-ip", policy.KeySpec{Kind: policy.KeyIP}),
			rule("tenant", policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant"}),
			rule("all", policy.KeySpec{Kind: policy.KeyGlobal}),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

func apply(t testing.TB, pol *policy.Compiled, ovs ...policy.Override) *policy.Compiled {
	t.Helper()
	out, errs := pol.WithOverrides(ovs)
	if len(errs) > 0 {
		t.Fatalf("WithOverrides: overrides[%d]: %v", errs[0].Index, errs[0].Err)
	}
	return out
}

// reports records a copy of each Report an Engine hands OnDecision.
type reports struct{ got []decision.Report }

func (r *reports) record(o *decision.Options) {
	o.OnDecision = func(_ *decision.Request, rep *decision.Report) {
		cp := *rep
		cp.Rules = slices.Clone(rep.Rules)
		r.got = append(r.got, cp)
	}
}

func (r *reports) last() decision.Report { return r.got[len(r.got)-1] }

// keys returns the store key of each rule of rep, by rule name.
func keys(rep decision.Report) map[string]string {
	m := map[string]string{}
	for _, r := range rep.Rules {
		m[r.Rule] = r.Key.String()
	}
	return m
}

// TestOverrideKeepsCounters: an override that lowers a rule's limit, for
// the client or for its address, keeps the rule's store key, so the next
// request is judged against what was counted so far: 3 of 10 spent, the
// limit lowered to 4, one more passes and the next is refused under the
// new limit.
func TestOverrideKeepsCounters(t *testing.T) {
	four := policy.Rate{N: 4, Period: time.Minute}
	for _, rule := range []string{"claims", "by-ip", "tenant", "all"} {
		for _, tt := range []struct {
			name   string
			o      policy.Override
			source string
		}{
			{"client", policy.Override{Client: "partner-a", Rule: rule, Rate: four}, "override:partner-a"},
			{"address", policy.Override{Addr: netip.MustParsePrefix("192.0.2.0/24"), Rule: rule, Rate: four}, "override:ip:192.0.2.0/24"},
		} {
			t.Run(rule+" by "+tt.name, func(t *testing.T) {
				var reps reports
				e := engine(t, nil, reps.record)
				pol := overridden(t)
				req := get("/claims/7", hdr{"X-Api-Key": {"key-a"}, "X-Tenant": {"acme"}})
				for range 3 {
					decide(t, e, pol, req)
				}
				before := keys(reps.last())
				lower := apply(t, pol, tt.o)
				if a := decide(t, e, lower, req); !a.pass {
					t.Fatalf("4th request under 4/m: %d %v, want a pass", a.status, a.body)
				}
				rep := reps.last()
				if got := keys(rep); !mapsEqual(got, before) {
					t.Errorf("keys under the override %v, before %v", got, before)
				}
				for _, r := range rep.Rules {
					want := limiter.Decision{Allowed: true, Limit: 10, Remaining: 6}
					if r.Rule == rule {
						want.Limit, want.Remaining = 4, 0
					}
					if r.Decision.Limit != want.Limit || r.Decision.Remaining != want.Remaining {
						t.Errorf("%s: limit %d remaining %d, want %d and %d", r.Rule, r.Decision.Limit, r.Decision.Remaining, want.Limit, want.Remaining)
					}
				}
				a := decide(t, e, lower, req)
				if a.status != 429 || !strings.Contains(a.body["detail"].(string), "exceeded 4 requests per 1m (rule "+rule+")") {
					t.Errorf("5th request: %d %v, want a 429 of rule %s at 4/m", a.status, a.body, rule)
				}
				ex := e.Explain(context.Background(), decision.Settings{Policy: lower}, req)
				for _, r := range ex.Rules {
					if want := cmpOr(r.Rule == rule, tt.source, "rule"); r.Source != want {
						t.Errorf("Explain: rule %s source %q, want %q", r.Rule, r.Source, want)
					}
				}
				if a := decide(t, e, pol, req); !a.pass {
					t.Errorf("the file's policy after the override: %d %v, want a pass (5 of 10)", a.status, a.body)
				}
			})
		}
	}
}

func cmpOr(cond bool, a, b string) string {
	if cond {
		return a
	}
	return b
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestOverrideLimitAtAddress: an address override applies to the callers
// counted in its range, through trusted proxies, the longest range
// first; a client's override beats it; callers elsewhere keep the file's
// limit.
func TestOverrideLimitAtAddress(t *testing.T) {
	var reps reports
	e := engine(t, nil, reps.record)
	per := func(n int64) policy.Rate { return policy.Rate{N: n, Period: time.Minute} }
	pol := apply(t, overridden(t),
		policy.Override{Addr: netip.MustParsePrefix("198.51.100.0/24"), Rule: "by-ip", Rate: per(5)},
		policy.Override{Addr: netip.MustParsePrefix("198.51.100.7/32"), Rule: "by-ip", Rate: per(3)},
		policy.Override{Addr: netip.MustParsePrefix("2001:db8::/48"), Rule: "by-ip", Rate: per(6)},
		policy.Override{Client: "partner-b", Rule: "by-ip", Rate: per(2)},
	)
	for _, tt := range []struct {
		name   string
		peer   string
		h      hdr
		limit  int64
		source string
	}{
		{"anonymous in the /24", "198.51.100.9:1", hdr{}, 5, "override:ip:198.51.100.0/24"},
		{"the /32 in the /24", "198.51.100.7:1", hdr{}, 3, "override:ip:198.51.100.7/32"},
		{"a listed client in the range", "198.51.100.9:1", hdr{"X-Api-Key": {"key-a"}}, 5, "override:ip:198.51.100.0/24"},
		{"the client's override beats the range", "198.51.100.9:1", hdr{"X-Api-Key": {"key-b"}}, 2, "override:partner-b"},
		{"through a trusted proxy", "10.0.0.1:1", hdr{"X-Forwarded-For": {"198.51.100.7"}}, 3, "override:ip:198.51.100.7/32"},
		{"through a trusted proxy, outside", "10.0.0.1:1", hdr{"X-Forwarded-For": {"192.0.2.1"}}, 10, "rule"},
		{"an IPv4-mapped peer", "[::ffff:198.51.100.9]:1", hdr{}, 5, "override:ip:198.51.100.0/24"},
		{"IPv6", "[2001:db8:0:5::1]:1", hdr{}, 6, "override:ip:2001:db8::/48"},
		{"outside every range", "192.0.2.1:1", hdr{}, 10, "rule"},
	} {
		req := decision.Request{Method: "GET", Path: "/claims", Peer: netip.MustParseAddrPort(tt.peer), Header: tt.h}
		decide(t, e, pol, req)
		for _, r := range reps.last().Rules {
			if r.Rule == "by-ip" && r.Decision.Limit != tt.limit {
				t.Errorf("%s: by-ip limit %d, want %d", tt.name, r.Decision.Limit, tt.limit)
			}
		}
		ex := e.Explain(context.Background(), decision.Settings{Policy: pol}, req)
		for _, r := range ex.Rules {
			if r.Rule == "by-ip" && (r.Source != tt.source || r.Limit.Rate() != tt.limit) {
				t.Errorf("%s: Explain by-ip %d from %q, want %d from %q", tt.name, r.Limit.Rate(), r.Source, tt.limit, tt.source)
			}
		}
	}
	res, err := e.Look(context.Background(), decision.Settings{Policy: pol}, "claims", decision.Target{Client: "partner-b"})
	if err != nil || res.Source != "rule" || res.Limit.Rate() != 10 {
		t.Errorf("Look claims of partner-b (no override of claims): %d from %q, %v; want the rule's 10", res.Limit.Rate(), res.Source, err)
	}
	pol = apply(t, pol, policy.Override{Client: "partner-b", Rule: "claims", Rate: per(2)})
	if res, _ := e.Look(context.Background(), decision.Settings{Policy: pol}, "claims", decision.Target{Client: "partner-b"}); res.Source != "override:partner-b" || res.Limit.Rate() != 2 {
		t.Errorf("Look claims of partner-b: %d from %q, want 2 from override:partner-b", res.Limit.Rate(), res.Source)
	}
}

// countingStore counts the decisions asked of it.
type countingStore struct {
	store.Store
	calls atomic.Int64
}

func (s *countingStore) Decide(ctx context.Context, key store.Key, l limiter.Limit, now time.Time, cost int64) (limiter.Decision, error) {
	s.calls.Add(1)
	return s.Store.Decide(ctx, key, l, now, cost)
}

func (s *countingStore) DecideEach(ctx context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	s.calls.Add(1)
	return s.Store.DecideEach(ctx, dst, reqs, now)
}

func (s *countingStore) DecideAll(ctx context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	s.calls.Add(1)
	return s.Store.DecideAll(ctx, dst, reqs, now)
}

// TestBlocked: a blocked client, or a caller counted in a blocked range,
// gets 403 problem+json naming the client or range and until when, and
// nothing is asked of the store; a block that has ended, or of another
// target, refuses nothing.
func TestBlocked(t *testing.T) {
	until := epoch.Add(2 * time.Hour)
	block := func(target string, until time.Time) policy.Override {
		client, p, err := policy.ParseTarget(target)
		if err != nil {
			t.Fatal(err)
		}
		return policy.Override{Client: client, Addr: p, Block: true, Until: until}
	}
	forever := " until an operator removes the block"
	tests := []struct {
		name    string
		ovs     []policy.Override
		peer    string
		h       hdr
		detail  string // "" for a pass
		blocked string
	}{
		{"a client, until", []policy.Override{block("partner-a", until)}, "192.0.2.1:1", hdr{"X-Api-Key": {"key-a"}},
			"partner-a is blocked until 2030-01-01T02:00:00Z", "partner-a"},
		{"a client, until a fraction of a second", []policy.Override{block("partner-a", until.Add(-time.Millisecond).In(time.FixedZone("CET", 3600)))},
			"192.0.2.1:1", hdr{"X-Api-Key": {"key-a"}}, "partner-a is blocked until 2030-01-01T02:00:00Z", "partner-a"},
		{"a client, until removed", []policy.Override{block("partner-a", time.Time{})}, "192.0.2.1:1", hdr{"X-Api-Key": {"key-a"}},
			"partner-a is blocked" + forever, "partner-a"},
		{"another client", []policy.Override{block("partner-a", time.Time{})}, "192.0.2.1:1", hdr{"X-Api-Key": {"key-b"}}, "", ""},
		{"a range, anonymous", []policy.Override{block("ip:192.0.2.0/24", time.Time{})}, "192.0.2.1:1", hdr{},
			"addresses in 192.0.2.0/24 are blocked" + forever, "ip:192.0.2.0/24"},
		{"a range, a listed client in it", []policy.Override{block("ip:192.0.2.0/24", until)}, "192.0.2.1:1", hdr{"X-Api-Key": {"key-b"}},
			"addresses in 192.0.2.0/24 are blocked until 2030-01-01T02:00:00Z", "ip:192.0.2.0/24"},
		{"one address", []policy.Override{block("ip:192.0.2.1", time.Time{})}, "192.0.2.1:1", hdr{},
			"addresses in 192.0.2.1/32 are blocked" + forever, "ip:192.0.2.1/32"},
		{"the longest range", []policy.Override{block("ip:192.0.0.0/16", time.Time{}), block("ip:192.0.2.0/24", until)}, "192.0.2.1:1", hdr{},
			"addresses in 192.0.2.0/24 are blocked until 2030-01-01T02:00:00Z", "ip:192.0.2.0/24"},
		{"IPv6", []policy.Override{block("ip:2001:db8::/48", time.Time{})}, "[2001:db8:0:7::1]:1", hdr{},
			"addresses in 2001:db8::/48 are blocked" + forever, "ip:2001:db8::/48"},
		{"an IPv4-mapped peer", []policy.Override{block("ip:192.0.2.0/24", time.Time{})}, "[::ffff:192.0.2.1]:1", hdr{},
			"addresses in 192.0.2.0/24 are blocked" + forever, "ip:192.0.2.0/24"},
		{"behind a trusted proxy", []policy.Override{block("ip:198.51.100.0/24", time.Time{})}, "10.0.0.1:1", hdr{"X-Forwarded-For": {"198.51.100.7"}},
			"addresses in 198.51.100.0/24 are blocked" + forever, "ip:198.51.100.0/24"},
		{"the trusted proxy's range", []policy.Override{block("ip:10.0.0.0/8", time.Time{})}, "10.0.0.1:1", hdr{"X-Forwarded-For": {"198.51.100.7"}}, "", ""},
		{"outside the range", []policy.Override{block("ip:192.0.2.0/24", time.Time{})}, "198.51.100.1:1", hdr{}, "", ""},
		{"an ended block", []policy.Override{block("partner-a", epoch), block("ip:192.0.2.0/24", epoch.Add(-time.Second))}, "192.0.2.1:1", hdr{"X-Api-Key": {"key-a"}}, "", ""},
		{"a range's limit is no block", []policy.Override{{Addr: netip.MustParsePrefix("192.0.2.0/24"), Rule: "claims", Rate: policy.Rate{N: 5, Period: time.Minute}}},
			"192.0.2.1:1", hdr{}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := memory.New(memory.Options{Clock: clock.NewFake(epoch)})
			t.Cleanup(func() { _ = mem.Close() })
			st := &countingStore{Store: mem}
			var reps reports
			e := engine(t, st, reps.record)
			pol := apply(t, overridden(t), tt.ovs...)
			req := decision.Request{Method: "GET", Path: "/claims/7", Peer: netip.MustParseAddrPort(tt.peer), Header: tt.h}
			a := decide(t, e, pol, req)
			rep := reps.last()
			if tt.detail == "" {
				if !a.pass || st.calls.Load() == 0 || rep.Blocked != "" {
					t.Fatalf("%d %v, %d store calls, blocked %q; want a pass, counted", a.status, a.body, st.calls.Load(), rep.Blocked)
				}
				return
			}
			if a.pass || a.status != 403 || rep.Status != 403 {
				t.Fatalf("%+v, report status %d; want 403", a, rep.Status)
			}
			want := map[string]any{"type": decision.ProblemBlocked, "title": "Forbidden", "status": 403.0, "detail": tt.detail}
			for k, v := range want {
				if a.body[k] != v {
					t.Errorf("body %s = %v, want %v", k, a.body[k], v)
				}
			}
			if len(a.body) != len(want) {
				t.Errorf("body %v has more than %v", a.body, want)
			}
			if a.fields["Content-Type"] != "application/problem+json" || a.fields["Cache-Control"] != "no-store" || a.fields["Retry-After"] != "" {
				t.Errorf("fields %v, want problem+json, no-store, no Retry-After", a.fields)
			}
			if st.calls.Load() != 0 || len(rep.Rules) != 0 || rep.Blocked != tt.blocked || rep.Counted != "" {
				t.Errorf("%d store calls, rules %v, blocked %q, counted %q; want nothing counted, blocked %q",
					st.calls.Load(), rep.Rules, rep.Blocked, rep.Counted, tt.blocked)
			}
			ex := e.Explain(context.Background(), decision.Settings{Policy: pol}, req)
			if ex.Status != 403 || ex.Detail != tt.detail || len(ex.Rules) != 0 || st.calls.Load() != 0 {
				t.Errorf("Explain: %d %q, %d rules, %d store calls; want the 403's detail, nothing read", ex.Status, ex.Detail, len(ex.Rules), st.calls.Load())
			}
			if ex.Method != "GET" || ex.Path != "/claims/7" || !ex.Addr.IsValid() {
				t.Errorf("Explain: %s %s from %v, want the request described", ex.Method, ex.Path, ex.Addr)
			}
			bad := req
			bad.Path = "/claims/%zz"
			if a := decide(t, e, pol, bad); a.status != 403 && tt.blocked == "partner-a" {
				t.Errorf("a blocked client's unreadable path: %d, want 403 (the block first)", a.status)
			}
			if ex := e.Explain(context.Background(), decision.Settings{Policy: pol}, bad); ex.Status != 403 && tt.blocked == "partner-a" {
				t.Errorf("Explain of a blocked client's unreadable path: %d, want 403", ex.Status)
			}
		})
	}
}

// TestBlockedNotCounted: a block leaves the counters as they were: once
// it is removed, the caller has the room it had.
func TestBlockedNotCounted(t *testing.T) {
	var reps reports
	e := engine(t, nil, reps.record)
	pol := overridden(t)
	req := get("/claims/7", hdr{"X-Api-Key": {"key-a"}, "X-Tenant": {"acme"}})
	decide(t, e, pol, req)
	blocked := apply(t, pol, policy.Override{Client: "partner-a", Block: true}, policy.Override{Addr: netip.MustParsePrefix("192.0.2.0/24"), Block: true})
	for range 20 {
		if a := decide(t, e, blocked, req); a.status != 403 {
			t.Fatalf("blocked: %d, want 403", a.status)
		}
	}
	decide(t, e, pol, req)
	for _, r := range reps.last().Rules {
		if r.Decision.Remaining != 8 {
			t.Errorf("%s after 20 blocked requests: %d remaining, want 8 (2 of 10 spent)", r.Rule, r.Decision.Remaining)
		}
	}
}
