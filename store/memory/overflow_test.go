package memory

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// TestFullStoreAllocatesNothing: once a flood has filled the store with
// limited keys, each new key's request is counted on its overflow counter
// without allocating: a flood costs the garbage collector nothing.
func TestFullStoreAllocatesNothing(t *testing.T) {
	s := newTest(t, Options{MaxKeys: 64, Shards: 1})
	spent := limiter.MustNew(limiter.FixedWindow, 1, time.Hour, 0)
	keys := make([]store.Key, 200)
	for i := range keys {
		keys[i] = store.NewKey("tenants", fmt.Sprint(i))
	}
	for _, k := range keys[:100] { // fills the store, then starts the overflow counter
		if _, err := s.Decide(ctx, k, spent, t0, 1); err != nil {
			t.Fatal(err)
		}
	}
	i := 100
	if allocs := testing.AllocsPerRun(99, func() {
		if _, err := s.Decide(ctx, keys[i], spent, t0, 1); err != nil {
			t.Fatal(err)
		}
		i++
	}); allocs != 0 {
		t.Errorf("a new key's decision in a full store allocates %v times, want 0", allocs)
	}
}
