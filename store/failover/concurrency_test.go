package failover_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
)

// Concurrent callers on one key are admitted exactly up to the limit, and
// every request is answered either by the shared store or from a cached
// denial, never both and never neither.
func TestConcurrentCallersOnOneKey(t *testing.T) {
	const goroutines, each = 8, 200
	f := newFixture(t, failover.Options{})
	l := must(t, limiter.FixedWindow, 100, time.Minute, 0)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range each {
				d, err := f.decide("a", l, 1)
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
	if got := allowed.Load(); got != 100 {
		t.Errorf("%d allowed, want 100", got)
	}
	cached, asked := f.fo.Stats().CachedRejections.Load(), f.shared.asked.Load()
	if cached+asked != goroutines*each || cached == 0 {
		t.Errorf("%d answered from the cache + %d asked of the shared store, want %d in all, some from the cache",
			cached, asked, goroutines*each)
	}
}

// Callers racing with a shared store that goes down and up, and a clock
// that moves: no data race, every answer is a decision or an error of the
// policy, and the state changes alternate (one call per transition).
func TestConcurrentFailuresAndRecoveries(t *testing.T) {
	for _, mode := range []store.FailurePolicy{store.FailOpen, store.FailClosed, store.FailLocal} {
		t.Run(mode.String(), func(t *testing.T) {
			f := newFixture(t, failover.Options{OnFailure: mode, Instances: 2, Threshold: 2, ProbeInterval: 10 * time.Millisecond})
			l := must(t, limiter.SlidingWindow, 50, time.Second, 0)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Go(func() {
					keys := []string{"a", "b", string(rune('c' + g))}
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						_, _ = f.decide(keys[i%len(keys)], l, 1)
					}
				})
			}
			for i := range 400 {
				f.shared.down.Store(i/25%2 == 1)
				f.clk.Advance(time.Millisecond)
				_, _ = f.decide("driver", l, 1)
			}
			close(stop)
			wg.Wait()
			checkAlternating(t, f.transitions())
		})
	}
}

// checkAlternating checks that state changes went degraded, shared,
// degraded, ... starting with degraded.
func checkAlternating(t *testing.T, changes []bool) {
	t.Helper()
	if len(changes) < 2 {
		t.Errorf("state changes %v: the store never went degraded and back", changes)
	}
	trues, falses := 0, 0
	for _, c := range changes {
		if c {
			trues++
		} else {
			falses++
		}
	}
	// Callbacks of racing transitions may be delivered out of order, but
	// each one follows a real change: the counts differ by at most one,
	// with degraded first.
	if d := trues - falses; d < 0 || d > 1 {
		t.Errorf("%d changes to degraded and %d back to shared: not one call per transition (%v)", trues, falses, changes)
	}
}
