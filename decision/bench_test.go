package decision_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/memory"
)

// benchDecide decides one request under a policy of n requests per second
// for partner-a (a client rule and an ip rule), with ovs in force, again
// and again, on a fake clock and a memory store, finishing each Verdict
// as a 200.
func benchDecide(b *testing.B, n int64, req decision.Request, ovs ...policy.Override) {
	clk := clock.NewFake(epoch)
	mem := memory.New(memory.Options{Clock: clk})
	b.Cleanup(func() { _ = mem.Close() })
	rate := policy.Rate{N: n, Period: time.Second}
	if n == 1 {
		rate.Period = 24 * time.Hour
	}
	pol, err := policy.Compile(policy.Policy{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		Clients: policy.Clients{Unknown: policy.UnknownAnonymous, List: []policy.Client{
			{ID: "partner-a", Keys: []string{"key-a"}},
		}},
		Rules: []policy.Rule{
			{Name: "claims", Match: policy.Match{Path: "/claims"}, Algorithm: limiter.SlidingWindow, Rate: rate},
			{Name: "per-ip", Key: policy.KeySpec{Kind: policy.KeyIP}, Algorithm: limiter.SlidingWindow, Rate: rate},
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	pol, errs := pol.WithOverrides(ovs)
	if len(errs) > 0 {
		b.Fatal(errs[0].Err)
	}
	e, err := decision.New(decision.Options{Store: mem, Clock: clk})
	if err != nil {
		b.Fatal(err)
	}
	set := decision.Settings{Policy: pol}
	ctx := context.Background()
	ok := &decision.Response{Passed: true, Status: 200}
	b.ReportAllocs()
	for b.Loop() {
		v := e.Decide(ctx, set, req)
		if v.Pass {
			v.Finish(ok)
		} else {
			v.Finish(nil)
		}
	}
}

var benchReq = decision.Request{Method: "GET", Path: "/claims/7", Peer: netip.MustParseAddrPort("192.0.2.1:1234"),
	Header: hdr{"X-Api-Key": {"key-a"}, "Accept": {"*/*"}, "User-Agent": {"bench"}}}

// BenchmarkDecidePass: a known client passes two rules.
func BenchmarkDecidePass(b *testing.B) { benchDecide(b, 1e9, benchReq) }

// BenchmarkDecideLimited: a known client over its limit gets a 429.
func BenchmarkDecideLimited(b *testing.B) { benchDecide(b, 1, benchReq) }

// BenchmarkDecideProxied: an anonymous caller behind two trusted proxies
// passes two rules.
func BenchmarkDecideProxied(b *testing.B) {
	benchDecide(b, 1e9, decision.Request{Method: "GET", Path: "/claims/7", Peer: netip.MustParseAddrPort("10.0.0.1:1234"),
		Header: hdr{"X-Forwarded-For": {"198.51.100.7, 203.0.113.9, 10.0.0.2"}}})
}

// BenchmarkDecideAddrOverride: a known client passes two rules, one of
// them under the override of its address's range, among ranges of other
// lengths (each a lookup).
func BenchmarkDecideAddrOverride(b *testing.B) {
	per := policy.Rate{N: 1e9, Period: time.Second}
	benchDecide(b, 1e9, benchReq,
		policy.Override{Addr: netip.MustParsePrefix("192.0.2.0/24"), Rule: "per-ip", Rate: per},
		policy.Override{Addr: netip.MustParsePrefix("192.0.0.0/16"), Rule: "claims", Rate: per},
		policy.Override{Addr: netip.MustParsePrefix("198.51.100.7/32"), Block: true},
		policy.Override{Addr: netip.MustParsePrefix("2001:db8::/48"), Rule: "per-ip", Rate: per})
}
