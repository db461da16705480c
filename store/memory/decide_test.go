package memory

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// TestNoAllocationForExistingKey checks the hot path: a key the store holds
// is decided without allocating, for every algorithm (sliding_log as long
// as its log does not grow: requests in one microsecond share an entry).
func TestNoAllocationForExistingKey(t *testing.T) {
	for _, alg := range limiter.Algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			s := newTest(t, Options{})
			l := limiter.MustNew(alg, 1000, time.Second, 0)
			mustDecide(t, s, store.RawKey("hot"), l, t0)
			allocs := testing.AllocsPerRun(200, func() {
				if _, err := s.Decide(ctx, store.RawKey("hot"), l, t0, 1); err != nil {
					t.Fatal(err)
				}
			})
			if allocs != 0 {
				t.Errorf("%v allocations per decision, want 0", allocs)
			}
		})
	}
}

// TestOneKeyManyGoroutines has 64 goroutines spend on one key at one
// instant: exactly the limit passes, whatever the algorithm.
func TestOneKeyManyGoroutines(t *testing.T) {
	for _, alg := range limiter.Algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			s := newTest(t, Options{})
			l := limiter.MustNew(alg, 100, time.Minute, 0)
			var allowed atomic.Int64
			var wg sync.WaitGroup
			for range 64 {
				wg.Go(func() {
					for range 10 {
						d, err := s.Decide(ctx, store.RawKey("shared"), l, t0, 1)
						if err != nil {
							t.Error(err)
							return
						}
						if d.Allowed {
							allowed.Add(1)
						}
					}
				})
			}
			wg.Wait()
			if n := allowed.Load(); n != l.Burst() {
				t.Errorf("%d of 640 passed, want exactly %d", n, l.Burst())
			}
		})
	}
}
