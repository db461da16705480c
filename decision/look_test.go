package decision

import (
	"context"
	"errors"
	"net/netip"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/throttle"
)

var lookEpoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// lookPolicy has a rule of each key kind on /claims, a concurrency rule
// on /uploads, plans and a client override that give some callers limits
// of their own, and anonymous callers.
func lookPolicy(t testing.TB) *policy.Compiled {
	t.Helper()
	rate := func(n int64) policy.Rate { return policy.Rate{N: n, Period: time.Minute} }
	claims := policy.Match{Path: "/claims"}
	c, err := policy.Compile(policy.Policy{
		Clients: policy.Clients{Unknown: policy.UnknownAnonymous, List: []policy.Client{
			{ID: "partner-a", Keys: []string{"key-a"}, Plan: "gold"},
			{ID: "partner-b", Keys: []string{"key-b"}, Limits: map[string]policy.Rate{"tenant": rate(5)}},
			{ID: "partner-c", Keys: []string{"key-c"}},
		}},
		Plans: map[string]policy.Plan{"gold": {Limits: map[string]policy.Rate{"by-ip": rate(9), "all": rate(90)}}},
		Rules: []policy.Rule{
			{Name: "claims", Match: claims, Key: policy.KeySpec{Kind: policy.KeyClient}, Algorithm: limiter.FixedWindow, Rate: rate(2)},
			{Name: "by-ip", Match: claims, Key: policy.KeySpec{Kind: policy.KeyIP}, Algorithm: limiter.SlidingWindow, Rate: rate(3)},
			{Name: "tenant", Match: claims, Key: policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant"}, Algorithm: limiter.GCRA, Rate: rate(4)},
			{Name: "all", Match: claims, Key: policy.KeySpec{Kind: policy.KeyGlobal}, Algorithm: limiter.SlidingLog, Rate: rate(100)},
			{Name: "uploads", Match: policy.Match{Path: "/uploads"}, Key: policy.KeySpec{Kind: policy.KeyClient}, Concurrency: 1},
			{Name: "tagged", Match: claims, Priority: new(throttle.High)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func lookEngine(t testing.TB) (*Engine, Settings) {
	t.Helper()
	clk := clock.NewFake(lookEpoch)
	mem := memory.New(memory.Options{Clock: clk})
	t.Cleanup(func() { _ = mem.Close() })
	e, err := New(Options{Store: mem, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return e, Settings{Policy: lookPolicy(t)}
}

// lookFields is a request's header fields.
type lookFields map[string][]string

func (f lookFields) Values(dst []string, name string) []string { return append(dst, f[name]...) }
func (f lookFields) Names(dst []string) []string {
	for k := range f {
		dst = append(dst, k)
	}
	return dst
}

// TestLookKeyIsTheRequestsKey: for every kind of key, and callers whose
// limit comes from the rule, a plan or their own override, the key Look
// reads is the key Decide counted the request on (Report.Rules[].Key).
func TestLookKeyIsTheRequestsKey(t *testing.T) {
	cases := []struct {
		name, key, peer, tenant string
		path                    string
		rule                    string
		target                  Target
	}{
		{"client", "key-a", "192.0.2.1", "acme", "/claims/7", "claims", Target{Client: "partner-a"}},
		{"client anonymous by ip", "", "192.0.2.9", "acme", "/claims/7", "claims", Target{Client: "anonymous", Counted: "192.0.2.9"}},
		{"ip, rule's own limit", "key-c", "192.0.2.1", "acme", "/claims/7", "by-ip", Target{Counted: "192.0.2.1"}},
		{"ip, client on rule's limit", "key-c", "192.0.2.1", "acme", "/claims/7", "by-ip", Target{Client: "partner-c", Counted: "192.0.2.1"}},
		{"ip, plan's limit", "key-a", "192.0.2.1", "acme", "/claims/7", "by-ip", Target{Client: "partner-a", Counted: "192.0.2.1"}},
		{"ipv6 network", "key-c", "[2001:db8:1:2::99]", "acme", "/claims/7", "by-ip", Target{Counted: "2001:db8:1:2::/64"}},
		{"ipv6 address in the network", "key-c", "[2001:db8:1:2::99]", "acme", "/claims/7", "by-ip", Target{Counted: "2001:db8:1:2::1"}},
		{"header", "key-c", "192.0.2.1", "acme", "/claims/7", "tenant", Target{Counted: "acme"}},
		{"header, client's own limit", "key-b", "192.0.2.1", "acme", "/claims/7", "tenant", Target{Client: "partner-b", Counted: "acme"}},
		{"header missing: shared", "key-c", "192.0.2.1", "", "/claims/7", "tenant", Target{Counted: ""}},
		{"global", "key-c", "192.0.2.1", "acme", "/claims/7", "all", Target{Counted: "global"}},
		{"global, plan's limit", "key-a", "192.0.2.1", "acme", "/claims/7", "all", Target{Client: "partner-a"}},
		{"concurrency", "key-a", "192.0.2.1", "acme", "/uploads/1", "uploads", Target{Client: "partner-a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e, set := lookEngine(t)
			var got store.Key
			e.opts.OnDecision = func(_ *Request, rep *Report) {
				for _, r := range rep.Rules {
					if r.Rule == tc.rule {
						got = r.Key
					}
				}
			}
			h := lookFields{}
			if tc.key != "" {
				h["X-Api-Key"] = []string{tc.key}
			}
			if tc.tenant != "" {
				h["X-Tenant"] = []string{tc.tenant}
			}
			v := e.Decide(context.Background(), set, Request{Method: "GET", Path: tc.path, Header: h,
				Peer: netip.MustParseAddrPort(tc.peer + ":4000")})
			v.Finish(nil)
			if got == (store.Key{}) {
				t.Fatalf("rule %s counted nothing", tc.rule)
			}
			res, err := e.Look(context.Background(), set, tc.rule, tc.target)
			if err != nil {
				t.Fatalf("Look: %v", err)
			}
			if res.key != got {
				t.Errorf("Look's key %q, the request's %q", res.key, got)
			}
		})
	}
}

func TestLookErrors(t *testing.T) {
	e, set := lookEngine(t)
	var nf *NotFoundError
	var te *TargetError
	for _, tc := range []struct {
		rule   string
		target Target
		want   any
		in     string
	}{
		{"nope", Target{Client: "partner-a"}, &nf, "rules: claims, by-ip, tenant, all, uploads, tagged"},
		{"claims", Target{Client: "partner-z"}, &nf, "clients: anonymous, partner-a, partner-b, partner-c"},
		{"by-ip", Target{Client: "partner-a"}, &te, "counts partner-a by address"},
		{"by-ip", Target{Counted: "not-an-ip"}, &te, "is not an address"},
		{"claims", Target{Client: "anonymous"}, &te, "counts callers without a listed key by address"},
		{"all", Target{Counted: "acme"}, &te, "counts all callers together"},
	} {
		_, err := e.Look(context.Background(), set, tc.rule, tc.target)
		switch want := tc.want.(type) {
		case **NotFoundError:
			if !errors.As(err, want) {
				t.Errorf("Look(%s, %+v): %v, want a *NotFoundError", tc.rule, tc.target, err)
				continue
			}
		case **TargetError:
			if !errors.As(err, want) {
				t.Errorf("Look(%s, %+v): %v, want a *TargetError", tc.rule, tc.target, err)
				continue
			}
		}
		if !contains(err.Error(), tc.in) {
			t.Errorf("Look(%s, %+v): %q, want it to say %q", tc.rule, tc.target, err, tc.in)
		}
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

// TestLookSpendsNothingAndResetFrees: looks spend nothing; once the
// caller is limited, Look says so with its Retry, and Reset lets its next
// request pass.
func TestLookSpendsNothingAndResetFrees(t *testing.T) {
	e, set := lookEngine(t)
	ctx := context.Background()
	req := Request{Method: "GET", Path: "/claims/7", Header: lookFields{"X-Api-Key": {"key-c"}, "X-Tenant": {"acme"}},
		Peer: netip.MustParseAddrPort("192.0.2.1:4000")}
	target := Target{Client: "partner-c"}
	for range 5 {
		res, err := e.Look(ctx, set, "claims", target)
		if err != nil || res.Decision.Remaining != 2 || res.Retry != 0 || res.Source != "rule" || res.Counted != "partner-c" {
			t.Fatalf("Look before any request: %+v, %v; want 2 remaining, no wait, source rule, counted partner-c", res, err)
		}
	}
	for i := range 3 {
		v := e.Decide(ctx, set, req)
		if pass := v.Pass; pass != (i < 2) {
			t.Fatalf("request %d: pass %v", i, pass)
		}
		v.Finish(nil)
	}
	res, err := e.Look(ctx, set, "claims", target)
	if err != nil || res.Decision.Remaining != 0 || res.Retry <= 0 || !res.Refuses() {
		t.Fatalf("Look once limited: %+v, %v; want 0 remaining and a wait", res, err)
	}
	if _, err := e.Reset(ctx, set, "claims", target); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	v := e.Decide(ctx, set, req)
	defer v.Finish(nil)
	if !v.Pass {
		t.Errorf("request after Reset: status %d, want passed", v.Status)
	}
	lim, _ := e.Look(ctx, set, "by-ip", Target{Counted: "192.0.2.1"})
	if lim.Decision.Remaining != 0 { // three requests passed: two before the reset, one after
		t.Errorf("by-ip after resetting claims only: %+v, want its 3 spent", lim.Decision)
	}
}

// TestExplain: what each rule counts, the limit's source, and what the
// request would get, without spending.
func TestExplain(t *testing.T) {
	e, set := lookEngine(t)
	ctx := context.Background()
	req := Request{Method: "get", Path: "/claims/7", Header: lookFields{"X-Api-Key": {"key-a"}, "X-Tenant": {"acme"}},
		Peer: netip.MustParseAddrPort("192.0.2.1:4000")}
	for range 3 {
		ex := e.Explain(ctx, set, req)
		if ex.Status != 0 || ex.Client != "partner-a" || ex.Plan != "gold" || ex.Method != "GET" || len(ex.Rules) != 5 {
			t.Fatalf("Explain: %+v; want a pass for partner-a (gold), GET, five rules", ex)
		}
	}
	want := map[string][2]string{ // rule: counted, source
		"claims": {"partner-a", "rule"},
		"by-ip":  {"192.0.2.1", "plan:gold"},
		"tenant": {`header X-Tenant "acme"`, "rule"},
		"all":    {"all callers together", "plan:gold"},
	}
	ex := e.Explain(ctx, set, req)
	for _, r := range ex.Rules {
		if w, ok := want[r.Rule]; ok && (r.Counted != w[0] || r.Source != w[1]) {
			t.Errorf("rule %s: counted %q source %q, want %q %q", r.Rule, r.Counted, r.Source, w[0], w[1])
		}
		if r.Rule == "claims" && r.Decision.Remaining != 2 {
			t.Errorf("claims after three explanations: %d remaining, want 2 (nothing spent)", r.Decision.Remaining)
		}
		if r.Rule == "tagged" && !r.Classifies {
			t.Errorf("tagged: %+v, want Classifies", r)
		}
	}
	for range 2 {
		e.Decide(ctx, set, req).Finish(nil)
	}
	ex = e.Explain(ctx, set, req)
	if ex.Status != 429 || ex.RetryAfter <= 0 || !contains(ex.Detail, "rule claims has no room for partner-a") {
		t.Errorf("Explain once limited: %d %q %v; want 429 naming claims and partner-a", ex.Status, ex.Detail, ex.RetryAfter)
	}
	for _, tc := range []struct {
		req    Request
		status int
		detail string
	}{
		{Request{Method: "GET", Path: "/claims/%zz"}, 400, "cannot be read one way only"},
		{Request{Method: "GET", Path: "/claims", Header: lookFields{"X-Api-Key": {"key-a", "key-b"}}}, 400, "sent 2 times"},
		{Request{Method: "GET", Path: "/claims", Header: lookFields{"X-Tenant": {"a", "b"}}}, 400, "X-Tenant sent 2 times"},
	} {
		ex := e.Explain(ctx, set, tc.req)
		if ex.Status != tc.status || !contains(ex.Detail, tc.detail) {
			t.Errorf("Explain(%+v): %d %q, want %d saying %q", tc.req, ex.Status, ex.Detail, tc.status, tc.detail)
		}
	}
}

var _ store.Resetter = (*memory.Store)(nil)
