//go:build !race

package decision_test

import (
	"context"
	"crypto/x509"
	"net/netip"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/policy"
)

// Deciding a known client's request, allowed or refused 429, allocates
// nothing once the Engine's pools and the policy's key cache are warm
// (BenchmarkDecidePass and BenchmarkDecideLimited measure the same), with
// or without address overrides, without a Pressure or under one that is
// off (turned on and off again). The race detector allocates of its own,
// hence the build tag.
func TestDecideAllocatesNothing(t *testing.T) {
	t.Run("no overrides", func(t *testing.T) { decideAllocatesNothing(t, claims(t), nil) })
	t.Run("pressure off", func(t *testing.T) {
		off := new(decision.Pressure)
		off.Set("switch", true)
		off.Set("switch", false)
		decideAllocatesNothing(t, claims(t), off)
	})
	// The caller's address is in two ranges that override claims (the
	// longer one in force), and ranges elsewhere are blocked.
	t.Run("address overrides", func(t *testing.T) {
		pol, errs := claims(t).WithOverrides([]policy.Override{
			{Addr: netip.MustParsePrefix("192.0.2.0/24"), Rule: "claims", Rate: policy.Rate{N: 1, Period: time.Hour}},
			{Addr: netip.MustParsePrefix("192.0.0.0/16"), Rule: "claims", Rate: policy.Rate{N: 5, Period: time.Hour}},
			{Addr: netip.MustParsePrefix("198.51.100.0/24"), Block: true},
			{Addr: netip.MustParsePrefix("2001:db8::/48"), Block: true},
		})
		if len(errs) > 0 {
			t.Fatal(errs[0].Err)
		}
		decideAllocatesNothing(t, pol, nil)
	})
}

func decideAllocatesNothing(t *testing.T, pol *policy.Compiled, p *decision.Pressure) {
	e := engine(t, nil)
	set := decision.Settings{Policy: pol, Pressure: p}
	req := get("/claims/7", hdr{"X-Api-Key": {"key-a"}})
	ok := &decision.Response{Passed: true, Status: 200}
	statuses := map[int]bool{}
	allocs := testing.AllocsPerRun(100, func() {
		v := e.Decide(context.Background(), set, req)
		statuses[v.Status] = true
		v.Finish(ok)
	})
	if allocs >= 1 { // below 1: a stray allocation elsewhere in the process, not one a request
		t.Errorf("%.1f allocations per request, want 0", allocs)
	}
	if !statuses[0] || !statuses[429] {
		t.Errorf("statuses %v, want both a pass (0) and a 429", statuses)
	}
}

// A caller named by its certificate (the key beside it agreeing) is
// decided without allocating too.
func TestDecideByCertAllocatesNothing(t *testing.T) {
	e := engine(t, nil)
	set := decision.Settings{Policy: certPolicy(t, policy.UnknownReject)}
	req := get("/claims/7", hdr{"X-Api-Key": {"key-a"}})
	req.Cert = policy.NewPeerCert(&x509.Certificate{Raw: []byte("der"), DNSNames: []string{"A.partners.example"}})
	ok := &decision.Response{Passed: true, Status: 200}
	allocs := testing.AllocsPerRun(100, func() {
		v := e.Decide(context.Background(), set, req)
		if v.Client != "partner-a" {
			t.Fatalf("client %q, want partner-a", v.Client)
		}
		v.Finish(ok)
	})
	if allocs >= 1 {
		t.Errorf("%.1f allocations per request, want 0", allocs)
	}
}
