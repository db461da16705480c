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

// Settle makes the stand-in a store.Settler, as store/redis is.
func (s *sharedStore) Settle(ctx context.Context, key store.Key, l limiter.Limit, now time.Time, r limiter.Reservation, reserved, actual int64) (limiter.Decision, error) {
	if s.down.Load() {
		return limiter.Decision{}, errDown
	}
	return s.Store.(store.Settler).Settle(ctx, key, l, now, r, reserved, actual)
}

func (f *fixture) settle(t *testing.T, key string, l limiter.Limit, d limiter.Decision, reserved, actual int64) limiter.Decision {
	t.Helper()
	got, err := f.fo.Settle(context.Background(), store.RawKey(key), l, f.clk.Now(), d.Reservation, reserved, actual)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSettleInTheStoreThatCounted: a reservation is settled by the store
// that made it and counts now; one the local fallback made is not refunded
// from the shared store's counts once it is back (where it never was), nor
// one the shared store made from the fallback's.
func TestSettleInTheStoreThatCounted(t *testing.T) {
	f := newFixture(t, failover.Options{OnFailure: store.FailLocal, Instances: 1, Threshold: 1, ProbeInterval: time.Second})
	l := must(t, limiter.FixedWindow, 5, time.Minute, 0)
	d, _ := f.decide("a", l, 5)
	if got := f.settle(t, "a", l, d, 5, 1); got.Remaining != 4 {
		t.Fatalf("shared refund: %+v, want 4 remaining", got)
	}
	shared, _ := f.decide("a", l, 4) // the shared window is full again
	f.shared.down.Store(true)
	f.clk.Advance(2 * time.Second)
	local, err := f.decide("a", l, 3) // counted by the fallback
	if err != nil || !local.Allowed || !f.fo.Degraded() {
		t.Fatalf("degraded decision: %+v, %v", local, err)
	}
	if got := f.settle(t, "a", l, shared, 4, 0); got != (limiter.Decision{}) {
		t.Errorf("a shared reservation settled by the fallback: %+v", got)
	}
	f.clk.Advance(time.Second)
	f.shared.down.Store(false)
	if d, _ := f.decide("a", l, 1); d.Allowed || f.fo.Degraded() {
		t.Fatalf("after recovery: %+v (degraded %v), want the shared full window", d, f.fo.Degraded())
	}
	f.settle(t, "a", l, local, 3, 0) // made by the fallback: must not refund the shared window
	if d, _ := f.shared.Store.Decide(context.Background(), store.RawKey("a"), l, f.clk.Now(), 0); d.Remaining != 0 {
		t.Errorf("a refund of the fallback's reservation opened the shared window: %+v", d)
	}
}

// watchingClock is a fake clock that calls watch on every Now, as the
// failover store reads it in the middle of a change of its circuit.
type watchingClock struct {
	*clock.Fake
	watch func()
}

func (c *watchingClock) Now() time.Time {
	if c.watch != nil {
		c.watch()
	}
	return c.Fake.Now()
}

// TestSettleWhileTheCircuitOpens: a settlement that comes while the
// circuit is opening (the store already degraded, the time of the change
// not yet recorded) does not go to the fallback with the time of the
// previous change: a reservation the shared store made just before would
// be settled from the fallback's counts.
func TestSettleWhileTheCircuitOpens(t *testing.T) {
	ctx := context.Background()
	clk := &watchingClock{Fake: clock.NewFake(t0)}
	mem, local := memory.New(memory.Options{Clock: clk.Fake}), memory.New(memory.Options{Clock: clk.Fake})
	shared := &sharedStore{Store: mem}
	fo, err := failover.New(failover.Options{Shared: shared, Fallback: local, OnFailure: store.FailLocal, Instances: 1,
		Threshold: 1, ProbeInterval: time.Minute, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	l := must(t, limiter.FixedWindow, 5, time.Minute, 0)
	if _, err := local.Decide(ctx, store.RawKey("a"), l, clk.Fake.Now(), 5); err != nil { // the fallback's window is full
		t.Fatal(err)
	}
	d, err := fo.Decide(ctx, store.RawKey("a"), l, clk.Now(), 5) // counted by the shared store
	if err != nil || !d.Allowed {
		t.Fatalf("shared decision: %+v, %v", d, err)
	}
	var seen []limiter.Decision
	clk.watch = func() {
		if fo.Degraded() {
			got, _ := fo.Settle(ctx, store.RawKey("a"), l, clk.Fake.Now(), d.Reservation, 5, 0)
			seen = append(seen, got)
		}
	}
	shared.down.Store(true)
	fo.Decide(ctx, store.RawKey("a"), l, clk.Fake.Now(), 1)
	clk.watch = nil
	for _, got := range seen {
		if got != (limiter.Decision{}) {
			t.Errorf("a shared reservation settled by the fallback as the circuit opened: %+v", got)
		}
	}
	if d, _ := local.Decide(ctx, store.RawKey("a"), l, clk.Fake.Now(), 0); d.Remaining != 0 {
		t.Errorf("the fallback's window was refunded: %+v", d)
	}
}
