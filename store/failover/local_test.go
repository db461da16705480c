package failover_test

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
)

// With on_failure: local, each instance enforces its share of the limit
// while the shared store is down: limit/Instances, rounded down, at least 1.
func TestLocalModeEnforcesAShareOfTheLimit(t *testing.T) {
	tests := []struct {
		name      string
		limit     limiter.Limit
		instances int
		requests  int
		want      int // allowed
		wantLimit int64
	}{
		{"100/m over 3 instances", must(t, limiter.FixedWindow, 100, time.Minute, 0), 3, 100, 33, 33},
		{"30/m over 3 instances", must(t, limiter.SlidingLog, 30, time.Minute, 0), 3, 30, 10, 10},
		{"one instance keeps the whole limit", must(t, limiter.SlidingWindow, 100, time.Minute, 0), 1, 150, 100, 100},
		{"the burst is shared too", must(t, limiter.GCRA, 90, time.Minute, 30), 3, 30, 10, 10},
		{"token_bucket burst", must(t, limiter.TokenBucket, 10, time.Second, 50), 5, 30, 10, 10},
		{"never below 1", must(t, limiter.FixedWindow, 2, time.Minute, 0), 3, 5, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, failover.Options{OnFailure: store.FailLocal, Instances: tt.instances, Threshold: 1})
			f.shared.down.Store(true)
			allowed := 0
			for i := range tt.requests {
				d, err := f.decide("a", tt.limit, 1)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if d.Limit != tt.wantLimit {
					t.Errorf("request %d: Decision.Limit = %d, want %d", i, d.Limit, tt.wantLimit)
				}
				if d.Allowed {
					allowed++
				}
			}
			if allowed != tt.want {
				t.Errorf("%d of %d requests allowed at one instant, want %d", allowed, tt.requests, tt.want)
			}
			if got := f.fo.Stats().Degraded.Load(); got != int64(tt.requests) {
				t.Errorf("Stats().Degraded = %d, want %d (every request)", got, tt.requests)
			}
		})
	}
}

// When the shared store is back, the whole limit applies again, counted by
// the shared store; the local counts are not carried over.
func TestLocalModeHandsBackToTheSharedStore(t *testing.T) {
	f := newFixture(t, failover.Options{OnFailure: store.FailLocal, Instances: 3, Threshold: 1, ProbeInterval: time.Second})
	l := must(t, limiter.FixedWindow, 30, time.Minute, 0)
	f.shared.down.Store(true)
	for range 10 {
		if d, err := f.decide("a", l, 1); err != nil || !d.Allowed {
			t.Fatalf("local share: got %+v, %v", d, err)
		}
	}
	if d, _ := f.decide("a", l, 1); d.Allowed {
		t.Fatal("the 11th request passed the local share of 10")
	}
	f.shared.down.Store(false)
	f.clk.Advance(time.Second)
	for i := range 30 {
		d, err := f.decide("a", l, 1)
		if err != nil || !d.Allowed || d.Limit != 30 {
			t.Fatalf("request %d after recovery: got %+v, %v; want allowed by the shared 30/m", i, d, err)
		}
	}
	if f.fo.Degraded() {
		t.Error("still degraded after a successful probe")
	}
}

func TestNewRejectsIncompleteOptions(t *testing.T) {
	if _, err := failover.New(failover.Options{}); err == nil {
		t.Error("New without a shared store: no error")
	}
	f := newFixture(t, failover.Options{})
	if _, err := failover.New(failover.Options{Shared: f.shared, OnFailure: store.FailLocal}); err == nil {
		t.Error("New in mode local without a fallback: no error")
	}
}
