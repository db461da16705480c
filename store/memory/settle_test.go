package memory

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// TestSettleChargeKeepsTheKey: a charge makes the key's state last longer
// than the reservation's Reset said; the sweeper must not forget it at the
// old expiry and hand the caller a full bucket.
func TestSettleChargeKeepsTheKey(t *testing.T) {
	fake := clock.NewFake(t0)
	swept := make(chan struct{}, 1)
	s := newStore(Options{Clock: fake, SweepInterval: 10 * time.Second, Shards: 4}, func() { swept <- struct{}{} })
	defer s.Close()
	l := limiter.MustNew(limiter.TokenBucket, 1, 10*time.Second, 100) // one token every 10s
	r := mustDecide(t, s, store.RawKey("k"), l, t0)
	if r.Reset != 10*time.Second {
		t.Fatalf("reservation: %+v, want Reset 10s", r)
	}
	d, err := s.Settle(ctx, store.RawKey("k"), l, t0, r.Reservation, 1, 50) // 49 more: 490s to refill
	if err != nil || d.Remaining != 50 {
		t.Fatalf("Settle: %+v, %v; want 50 remaining", d, err)
	}
	fake.Advance(20 * time.Second)
	select {
	case <-swept:
	case <-time.After(10 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("no sweep after the clock passed a tick")
	}
	if got := mustLook(t, s, store.RawKey("k"), l, t0.Add(20*time.Second)); got.Remaining != 52 {
		t.Errorf("after 20s: remaining %d, want 52 (50 + 2 refilled): the charge was forgotten", got.Remaining)
	}
}

func mustLook(t *testing.T, s *Store, key store.Key, l limiter.Limit, now time.Time) limiter.Decision {
	t.Helper()
	d, err := s.Decide(ctx, key, l, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
