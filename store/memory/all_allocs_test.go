//go:build !race

package memory

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// TestDecideAllAllocatesNothing decides three rules of one request,
// passing and then refused, into memory the caller gives.
func TestDecideAllAllocatesNothing(t *testing.T) {
	s := newTest(t, Options{})
	reqs := []store.Request{
		{Key: store.NewKey("a", "c"), Limit: mustLimit(t, limiter.GCRA, 10, time.Second), Cost: 1},
		{Key: store.NewKey("b", "c"), Limit: mustLimit(t, limiter.FixedWindow, 50, time.Hour), Cost: 1},
		{Key: store.NewKey("c", "c"), Limit: mustLimit(t, limiter.TokenBucket, 1000, time.Second), Cost: 1, Shadow: true},
	}
	dst := make([]store.Result, 0, len(reqs))
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if dst, err = s.DecideAll(ctx, dst[:0], reqs, t0); err != nil {
			t.Fatal(err)
		}
	})
	if allocs >= 1 {
		t.Errorf("%.1f allocations per call, want 0", allocs)
	}
}
