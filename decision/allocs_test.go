//go:build !race

package decision_test

import (
	"context"
	"testing"

	"github.com/sluice-rl/sluice/decision"
)

// Deciding a known client's request, allowed or refused 429, allocates
// nothing once the Engine's pools and the policy's key cache are warm
// (BenchmarkDecidePass and BenchmarkDecideLimited measure the same),
// without a Pressure or under one that is off (turned on and off again).
// The race detector allocates of its own, hence the build tag.
func TestDecideAllocatesNothing(t *testing.T) {
	off := new(decision.Pressure)
	off.Set("switch", true)
	off.Set("switch", false)
	for name, p := range map[string]*decision.Pressure{"no pressure": nil, "pressure off": off} {
		pol := claims(t)
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
			t.Errorf("%s: %.1f allocations per request, want 0", name, allocs)
		}
		if !statuses[0] || !statuses[429] {
			t.Errorf("%s: statuses %v, want both a pass (0) and a 429", name, statuses)
		}
	}
}
