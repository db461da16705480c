package memory

import (
	"errors"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// TestResetForgetsOneKey: a limited key passes again after Reset, its
// sliding_log entries are given back to MaxLogEntries, another key keeps
// its counter, and a key's leases are forgotten with it.
func TestResetForgetsOneKey(t *testing.T) {
	s := newTest(t, Options{})
	for _, alg := range []limiter.Algorithm{limiter.SlidingLog, limiter.GCRA, limiter.FixedWindow} {
		t.Run(alg.String(), func(t *testing.T) {
			l := mustLimit(t, alg, 2, time.Minute)
			a, b := store.NewKey("r", alg.String(), "a"), store.NewKey("r", alg.String(), "b")
			for i := range 2 { // a second apart: two entries each under sliding_log
				mustDecide(t, s, a, l, t0.Add(time.Duration(i)*time.Second))
				mustDecide(t, s, b, l, t0.Add(time.Duration(i)*time.Second))
			}
			t1 := t0.Add(2 * time.Second)
			if d := mustDecide(t, s, a, l, t1); d.Allowed {
				t.Fatalf("third request allowed before the reset: %+v", d)
			}
			if err := s.Reset(ctx, a); err != nil {
				t.Fatalf("Reset: %v", err)
			}
			if s.has(a) {
				t.Fatal("the key is still held after Reset")
			}
			if d := mustDecide(t, s, a, l, t1); !d.Allowed || d.Remaining != 1 {
				t.Errorf("after Reset: %+v, want allowed with 1 remaining (a fresh counter)", d)
			}
			if d := mustDecide(t, s, b, l, t1); d.Allowed {
				t.Errorf("another key after Reset: %+v, want still denied", d)
			}
		})
	}
	if err := s.Reset(ctx, store.NewKey("r", "never seen")); err != nil {
		t.Errorf("Reset of a key never seen: %v, want nil", err)
	}
	// sliding_log's entries: b's two, and a's one since its reset.
	if used := s.bound.used.Load(); used != 3 {
		t.Errorf("log entries held: %d, want 3 (the reset gave a's two back)", used)
	}
}

func mustLimit(t *testing.T, alg limiter.Algorithm, n int64, period time.Duration) limiter.Limit {
	t.Helper()
	l, err := limiter.New(alg, n, period, 0)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestResetForgetsLeases(t *testing.T) {
	s := newTest(t, Options{})
	limit := store.Concurrency{Max: 1, TTL: time.Minute}
	key := store.NewKey("uploads", "concurrency", "a")
	if d, err := s.Acquire(ctx, key, limit, t0, 1); err != nil || !d.Allowed {
		t.Fatalf("Acquire: %+v, %v", d, err)
	}
	if d, _ := s.Acquire(ctx, key, limit, t0, 1); d.Allowed {
		t.Fatalf("second Acquire allowed over Max 1: %+v", d)
	}
	if err := s.Reset(ctx, key); err != nil {
		t.Fatalf("Reset: %v", err)
	}
	if d, err := s.Acquire(ctx, key, limit, t0, 1); err != nil || !d.Allowed || d.InFlight != 1 {
		t.Errorf("Acquire after Reset: %+v, %v; want allowed with 1 in flight", d, err)
	}
}

func TestResetAfterClose(t *testing.T) {
	s := New(Options{})
	s.Close()
	if err := s.Reset(ctx, store.RawKey("k")); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Reset after Close: %v, want store.ErrClosed", err)
	}
}
