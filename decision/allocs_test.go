//go:build !race

package decision_test

import (
	"context"
	"testing"

	"github.com/sluice-rl/sluice/decision"
)

// Deciding a known client's request, allowed or refused 429, allocates
// nothing once the Engine's pools and the policy's key cache are warm
// (BenchmarkDecidePass and BenchmarkDecideLimited measure the same). The
// race detector allocates of its own, hence the build tag.
func TestDecideAllocatesNothing(t *testing.T) {
	pol := claims(t)
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
