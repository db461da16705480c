package failover_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
	"github.com/sluice-rl/sluice/store/memory"
)

// feedStore is a shared store that resets (the memory store's Reset) and
// is a store.ResetFeed whose resets from other instances a test sends by
// calling hear.
type feedStore struct {
	*sharedStore
	mem    *memory.Store
	mu     sync.Mutex
	forget func(store.Key)
	deaf   atomic.Bool // its subscription is not made (yet, or any more)
}

func (s *feedStore) Hearing() bool { return !s.deaf.Load() }

func (s *feedStore) Reset(ctx context.Context, key store.Key) error {
	if s.down.Load() {
		return errDown
	}
	return s.mem.Reset(ctx, key)
}

func (s *feedStore) WatchResets(forget func(store.Key)) {
	s.mu.Lock()
	s.forget = forget
	s.mu.Unlock()
}

// hear delivers a reset another instance made.
func (s *feedStore) hear(key store.Key) {
	s.mu.Lock()
	forget := s.forget
	s.mu.Unlock()
	forget(key)
}

func newFeedFixture(t *testing.T, onFailure store.FailurePolicy) (*failover.Store, *feedStore, *memory.Store) {
	t.Helper()
	f := newFixture(t, failover.Options{})
	mem := f.shared.Store.(*memory.Store)
	shared := &feedStore{sharedStore: f.shared, mem: mem}
	opts := failover.Options{Shared: shared, Clock: f.clk, OnFailure: onFailure}
	var fallback *memory.Store
	if onFailure == store.FailLocal {
		fallback = memory.New(memory.Options{Clock: f.clk})
		opts.Fallback = fallback
	}
	fo, err := failover.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = fo.Close() })
	if shared.forget == nil {
		t.Fatal("failover.New did not watch the shared store's resets")
	}
	return fo, shared, fallback
}

// TestResetForgetsTheCachedRejection: after a denial is cached, a Reset on
// this instance, or one heard from another, lets the next request reach
// the shared store and pass.
func TestResetForgetsTheCachedRejection(t *testing.T) {
	l, _ := limiter.New(limiter.FixedWindow, 1, time.Minute, 0)
	for _, how := range []string{"here", "heard", "heard all"} {
		t.Run(how, func(t *testing.T) {
			fo, shared, _ := newFeedFixture(t, store.FailOpen)
			ctx := context.Background()
			decideOK := func(want bool) {
				t.Helper()
				if d, err := fo.Decide(ctx, store.RawKey("k"), l, t0, 1); err != nil || d.Allowed != want {
					t.Fatalf("Decide: %+v, %v; want allowed %v", d, err, want)
				}
			}
			decideOK(true)
			decideOK(false) // asks the shared store, and remembers its denial
			calls := shared.calls.Load()
			decideOK(false)
			if shared.calls.Load() != calls {
				t.Fatal("the repeated denial reached the shared store: nothing was cached")
			}
			switch how {
			case "here":
				if err := fo.Reset(ctx, store.RawKey("k")); err != nil {
					t.Fatalf("Reset: %v", err)
				}
			case "heard":
				_ = shared.mem.Reset(ctx, store.RawKey("k")) // another instance reset it...
				shared.hear(store.RawKey("k"))               // ...and told this one
			case "heard all":
				_ = shared.mem.Reset(ctx, store.RawKey("k"))
				shared.hear(store.Key{}) // the feed was lost and is back
			}
			decideOK(true)
			if shared.calls.Load() == calls {
				t.Error("the request after the reset was answered from the cache")
			}
		})
	}
}

// TestResetHeardResetsTheFallback: under on_failure: local, a reset heard
// from another instance resets this instance's local counter of the key.
func TestResetHeardResetsTheFallback(t *testing.T) {
	fo, shared, fallback := newFeedFixture(t, store.FailLocal)
	ctx := context.Background()
	l, _ := limiter.New(limiter.FixedWindow, 1, time.Minute, 0)
	shared.down.Store(true)
	for range 3 { // opens the circuit; the fallback counts
		_, _ = fo.Decide(ctx, store.RawKey("k"), l, t0, 1)
	}
	if d, _ := fallback.Decide(ctx, store.RawKey("k"), l, t0, 0); d.Remaining != 0 {
		t.Fatalf("fallback's counter: %+v, want spent", d)
	}
	shared.hear(store.RawKey("k"))
	if d, _ := fallback.Decide(ctx, store.RawKey("k"), l, t0, 0); d.Remaining != 1 {
		t.Errorf("fallback's counter after a heard reset: %+v, want fresh (1 remaining)", d)
	}
	if err := fo.Reset(ctx, store.RawKey("k")); err == nil {
		t.Error("Reset while the shared store is down: nil error")
	}
}

// TestNoCachedRejectionWhileResetsAreNotHeard: while the shared store's
// reset feed is not heard (its subscription not made yet, or lost), a
// denial is not cached, so that a reset made on another instance then,
// which cannot reach this one, is not outlived here: the next request
// asks the shared store and passes. Once the feed is heard again,
// denials are cached again. For one rule (Decide) and several
// (DecideAll).
func TestNoCachedRejectionWhileResetsAreNotHeard(t *testing.T) {
	l, _ := limiter.New(limiter.FixedWindow, 1, time.Minute, 0)
	ctx := context.Background()
	for _, how := range []string{"Decide", "DecideAll"} {
		t.Run(how, func(t *testing.T) {
			fo, shared, _ := newFeedFixture(t, store.FailOpen)
			decideOK := func(want bool) {
				t.Helper()
				var d limiter.Decision
				var err error
				if how == "Decide" {
					d, err = fo.Decide(ctx, store.RawKey("k"), l, t0, 1)
				} else {
					var res []store.Result
					res, err = fo.DecideAll(ctx, nil, []store.Request{{Key: store.RawKey("k"), Limit: l, Cost: 1}}, t0)
					if err == nil {
						d = res[0].Decision
					}
				}
				if err != nil || d.Allowed != want {
					t.Fatalf("%s: %+v, %v; want allowed %v", how, d, err, want)
				}
			}
			shared.deaf.Store(true)
			decideOK(true)
			decideOK(false)                              // the shared store's denial: not cached
			_ = shared.mem.Reset(ctx, store.RawKey("k")) // another instance reset it; this one cannot hear
			decideOK(true)
			if got := fo.Stats().CachedRejections.Load(); got != 0 {
				t.Errorf("%d cached rejections while the feed was not heard, want 0", got)
			}

			shared.deaf.Store(false)
			shared.hear(store.Key{}) // the subscription is made
			decideOK(false)          // denied by the shared store, and cached
			decideOK(false)
			if got := fo.Stats().CachedRejections.Load(); got != 1 {
				t.Errorf("%d cached rejections once the feed is heard, want 1", got)
			}
		})
	}
}
