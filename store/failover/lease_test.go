package failover_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
)

// The stand-in keeps leases as Redis does, in its memory store, and fails
// them with everything else while down.

func (s *sharedStore) Acquire(ctx context.Context, key store.Key, limit store.Concurrency, now time.Time, cost int64) (store.LeaseDecision, error) {
	s.calls.Add(1)
	if s.down.Load() {
		return store.LeaseDecision{}, errDown
	}
	return s.Store.(store.Leaser).Acquire(ctx, key, limit, now, cost)
}

func (s *sharedStore) Release(ctx context.Context, l store.Lease, now time.Time) error {
	if s.down.Load() {
		return errDown
	}
	return s.Store.(store.Leaser).Release(ctx, l, now)
}

func (s *sharedStore) Renew(ctx context.Context, ls []store.Lease, now time.Time) ([]bool, error) {
	if s.down.Load() {
		return make([]bool, len(ls)), errDown
	}
	return s.Store.(store.Leaser).Renew(ctx, ls, now)
}

var ten = store.Concurrency{Max: 10, TTL: 30 * time.Second}

func (f *fixture) acquire(t *testing.T, key string, limit store.Concurrency) (store.LeaseDecision, error) {
	t.Helper()
	return f.fo.Acquire(context.Background(), store.RawKey(key), limit, f.clk.Now(), 1)
}

// inFlight returns the slots key holds in the shared store.
func (f *fixture) inFlight(t *testing.T, key string) int64 {
	t.Helper()
	d, err := f.shared.Store.(store.Leaser).Acquire(context.Background(), store.RawKey(key), store.Concurrency{Max: 100}, f.clk.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return d.InFlight
}

func TestLeasesShared(t *testing.T) {
	f := newFixture(t, failover.Options{})
	d, err := f.acquire(t, "a", ten)
	if err != nil || !d.Allowed || d.Lease.IsZero() {
		t.Fatalf("Acquire = %+v, %v", d, err)
	}
	if n := f.inFlight(t, "a"); n != 1 {
		t.Errorf("shared store holds %d, want 1", n)
	}
	if err := f.fo.Release(context.Background(), d.Lease, f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	if n := f.inFlight(t, "a"); n != 0 {
		t.Errorf("shared store holds %d after Release, want 0", n)
	}
}

func TestLeasesWhileSharedStoreDown(t *testing.T) {
	t.Run("open", func(t *testing.T) {
		f := newFixture(t, failover.Options{Threshold: 1})
		f.shared.down.Store(true)
		_, err := f.acquire(t, "a", ten)
		var u *store.UnavailableError
		if !errors.Is(err, errDown) || errors.As(err, &u) {
			t.Errorf("Acquire error %v, want the shared store's (admitted without a lease)", err)
		}
		if _, err := f.acquire(t, "a", ten); err == nil || !f.fo.Degraded() {
			t.Errorf("circuit open: %v, degraded %v", err, f.fo.Degraded())
		}
		if n := f.fo.Stats().SharedErrors.Load(); n != 1 {
			t.Errorf("SharedErrors = %d, want 1 (the second was not sent)", n)
		}
	})
	t.Run("closed", func(t *testing.T) {
		f := newFixture(t, failover.Options{OnFailure: store.FailClosed, Threshold: 1})
		f.shared.down.Store(true)
		_, err := f.acquire(t, "a", ten)
		var u *store.UnavailableError
		if !errors.As(err, &u) || u.RetryAfter != time.Second {
			t.Errorf("Acquire error %v, want a 503 with Retry-After 1s", err)
		}
	})
}

// With on_failure: local each instance holds Max/Instances leases in its
// memory store; a local lease goes back to the local store, also once the
// shared store is back, and is renewed there.
func TestLeasesLocal(t *testing.T) {
	f := newFixture(t, failover.Options{OnFailure: store.FailLocal, Instances: 3, Threshold: 1, ProbeInterval: time.Second})
	f.shared.down.Store(true)
	var held []store.Lease
	for i := range 4 {
		d, err := f.acquire(t, "a", ten)
		if err != nil {
			t.Fatal(err)
		}
		if d.Limit != 3 || d.Allowed != (i < 3) {
			t.Errorf("request %d: %+v, want limit 3, the first 3 allowed", i, d)
		}
		if d.Allowed {
			if !strings.HasPrefix(d.Lease.ID, "local:") {
				t.Errorf("local lease ID %q", d.Lease.ID)
			}
			held = append(held, d.Lease)
		}
	}
	f.clk.Advance(20 * time.Second)
	kept, err := f.fo.Renew(context.Background(), held, f.clk.Now())
	if err != nil || len(kept) != 3 || !kept[0] || !kept[1] || !kept[2] {
		t.Errorf("Renew = %v, %v; want all kept", kept, err)
	}
	f.clk.Advance(20 * time.Second) // past the first TTL: only the renewal keeps them
	f.shared.down.Store(false)
	if d, err := f.acquire(t, "a", ten); err != nil || !d.Allowed || d.Limit != 10 || strings.HasPrefix(d.Lease.ID, "local:") {
		t.Fatalf("after recovery: %+v, %v; want a shared lease of 10", d, err)
	}
	if err := f.fo.Release(context.Background(), held[0], f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	if n := f.inFlight(t, "a"); n != 1 {
		t.Errorf("shared store holds %d, want 1: the local lease's release went to it", n)
	}
	// The local store freed the slot: down again, one more local lease fits.
	f.shared.down.Store(true)
	f.clk.Advance(time.Second)
	if d, err := f.acquire(t, "a", ten); err != nil || !d.Allowed || d.InFlight != 3 {
		t.Errorf("local again: %+v, %v; want allowed with 3 in flight", d, err)
	}
}

// A caller that leaves before the shared store answers does not count
// towards the circuit.
func TestLeaseCallerGoneIsNoFailure(t *testing.T) {
	f := newFixture(t, failover.Options{Threshold: 1})
	f.shared.down.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := f.fo.Acquire(ctx, store.RawKey("a"), ten, f.clk.Now(), 1); !errors.Is(err, context.Canceled) {
		t.Errorf("Acquire error %v, want context.Canceled", err)
	}
	if f.fo.Degraded() {
		t.Error("a caller that left opened the circuit")
	}
}
