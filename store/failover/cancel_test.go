package failover_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
	"github.com/sluice-rl/sluice/store/memory"
)

// TestCancelGoesToTheCountingStore: a held request's reservation is given
// back by the shared store while it counts, by the local fallback (under
// this instance's share, which keeps the delay) while degraded with
// on_failure local, and not at all while degraded otherwise.
func TestCancelGoesToTheCountingStore(t *testing.T) {
	ctx := context.Background()
	l, err := limiter.MustNew(limiter.LeakyBucket, 10, time.Second, 1).WithDelay(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name     string
		degraded bool
		policy   store.FailurePolicy
		want     bool
	}{{"shared", false, store.FailOpen, true}, {"local", true, store.FailLocal, true}, {"open", true, store.FailOpen, false}} {
		t.Run(c.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			mem, local := memory.New(memory.Options{Clock: clk}), memory.New(memory.Options{Clock: clk})
			defer mem.Close()
			defer local.Close()
			shared := &sharedStore{Store: mem}
			shared.down.Store(c.degraded)
			s, err := failover.New(failover.Options{Shared: shared, Fallback: local, OnFailure: c.policy, Instances: 2,
				Threshold: 1, StartDegraded: c.degraded, Clock: clk})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			clk.Advance(2 * failover.SettleMargin) // the fallback gives back only what it made after the change
			var d limiter.Decision
			for range 2 {
				if d, err = s.Decide(ctx, store.RawKey("k"), l, clk.Now(), 1); err != nil && c.policy != store.FailOpen {
					t.Fatal(err)
				}
			}
			if s.Degraded() != c.degraded {
				t.Fatalf("degraded %v, want %v", s.Degraded(), c.degraded)
			}
			if c.want && d.Delay == 0 {
				t.Fatalf("the second request was not held: %+v", d)
			}
			got, err := s.Cancel(ctx, store.RawKey("k"), l, d.Reservation, 1)
			if err != nil || got != c.want {
				t.Errorf("Cancel = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

// Cancel makes the stand-in a store.Canceler, as store/redis is.
func (s *sharedStore) Cancel(ctx context.Context, key store.Key, l limiter.Limit, r limiter.Reservation, cost int64) (bool, error) {
	if s.down.Load() {
		return false, errDown
	}
	return s.Store.(store.Canceler).Cancel(ctx, key, l, r, cost)
}

// TestCancelInTheStoreThatCounted: a reservation the shared store made is
// not given back by the local fallback once degraded, even where the
// fallback's key happens to show the same drain point (a request there
// exactly a turn later): it would give back the fallback's own request.
func TestCancelInTheStoreThatCounted(t *testing.T) {
	ctx := context.Background()
	clk := clock.NewFake(t0)
	l, err := limiter.MustNew(limiter.LeakyBucket, 1, time.Second, 1).WithDelay(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	mem, local := memory.New(memory.Options{Clock: clk}), memory.New(memory.Options{Clock: clk})
	defer mem.Close()
	defer local.Close()
	shared := &sharedStore{Store: mem}
	s, err := failover.New(failover.Options{Shared: shared, Fallback: local, OnFailure: store.FailLocal, Instances: 1,
		Threshold: 1, ProbeInterval: time.Minute, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Decide(ctx, store.RawKey("k"), l, clk.Now(), 1)
	held, _ := s.Decide(ctx, store.RawKey("k"), l, clk.Now(), 1) // level 2 at t0: held 1s
	if held.Delay != time.Second {
		t.Fatalf("second request not held: %+v", held)
	}
	shared.down.Store(true)
	clk.Advance(time.Second)
	d, err := s.Decide(ctx, store.RawKey("k"), l, clk.Now(), 1) // the fallback's: level 1 at t0+1s, the same drain point
	if err != nil || !d.Allowed || d.Delay != 0 || !s.Degraded() {
		t.Fatalf("fallback decision: %+v, %v (degraded %v)", d, err, s.Degraded())
	}
	if ok, err := s.Cancel(ctx, store.RawKey("k"), l, held.Reservation, 1); ok || err != nil {
		t.Errorf("the shared store's reservation was given back by the fallback: %v, %v", ok, err)
	}
	if d, _ := local.Decide(ctx, store.RawKey("k"), l, clk.Now(), 0); d.Remaining != 0 {
		t.Errorf("the fallback's own request was given back: %+v", d)
	}
}
