//go:build !race

package decision_test

import (
	"context"
	"net/netip"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/policy"
)

// Deciding a known client's request, allowed or refused 429, allocates
// nothing once the Engine's pools and the policy's key cache are warm
// (BenchmarkDecidePass and BenchmarkDecideLimited measure the same). The
// race detector allocates of its own, hence the build tag.
func TestDecideAllocatesNothing(t *testing.T) {
	t.Run("no overrides", func(t *testing.T) { decideAllocatesNothing(t, claims(t)) })
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
		decideAllocatesNothing(t, pol)
	})
}

func decideAllocatesNothing(t *testing.T, pol *policy.Compiled) {
	e := engine(t, nil)
	set := decision.Settings{Policy: pol}
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
