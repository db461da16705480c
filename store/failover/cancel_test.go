package failover_test

import (
	"context"
	"testing"
	"time"

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
			mem, local := memory.New(memory.Options{}), memory.New(memory.Options{})
			defer mem.Close()
			defer local.Close()
			shared := &cancelingShared{&sharedStore{Store: mem}, mem}
			shared.down.Store(c.degraded)
			s, err := failover.New(failover.Options{Shared: shared, Fallback: local, OnFailure: c.policy, Instances: 2,
				Threshold: 1})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var d limiter.Decision
			for range 2 {
				if d, err = s.Decide(ctx, "k", l, t0, 1); err != nil && c.policy != store.FailOpen {
					t.Fatal(err)
				}
			}
			if s.Degraded() != c.degraded {
				t.Fatalf("degraded %v, want %v", s.Degraded(), c.degraded)
			}
			if c.want && d.Delay == 0 {
				t.Fatalf("the second request was not held: %+v", d)
			}
			got, err := s.Cancel(ctx, "k", l, d.Reservation, 1)
			if err != nil || got != c.want {
				t.Errorf("Cancel = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}

// cancelingShared is a sharedStore that gives reservations back.
type cancelingShared struct {
	*sharedStore
	mem *memory.Store
}

func (s *cancelingShared) Cancel(ctx context.Context, key string, l limiter.Limit, r limiter.Reservation, cost int64) (bool, error) {
	return s.mem.Cancel(ctx, key, l, r, cost)
}
