package failover_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/store/storetest"
)

// openHealthy returns a failover store over a healthy memory store, with
// a memory fallback it never uses: it must pass what every store passes.
func openHealthy(t *testing.T) *failover.Store {
	clk := clock.NewFake(t0)
	s, err := failover.New(failover.Options{Shared: memory.New(memory.Options{Clock: clk}),
		Fallback: memory.New(memory.Options{Clock: clk}), OnFailure: store.FailLocal, Instances: 2, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestConformance runs the settle and lease conformance suites through a
// failover store whose shared store is up. (The decision tables are not
// run: a cached denial is judged on the store's clock, not on the tables'
// times.)
func TestConformance(t *testing.T) {
	storetest.RunSettle(t, func(t *testing.T) store.Store { return openHealthy(t) })
	storetest.RunLeases(t, func(t *testing.T) storetest.LeaseStore { return openHealthy(t) })
}

// marching is a clock that moves on two seconds each time it is read: a
// cached denial (at most a second old) is then never replayed, and the
// DecideAll tables' times alone decide.
type marching struct{ *clock.Fake }

func (m marching) Now() time.Time {
	m.Advance(2 * time.Second)
	return m.Fake.Now()
}

// down is a shared store that is down: every call fails.
type down struct{ store.Store }

func (down) DecideEach(context.Context, []store.Result, []store.Request, time.Time) ([]store.Result, error) {
	return nil, errDown
}

func (down) DecideAll(_ context.Context, dst []store.Result, _ []store.Request, _ time.Time) ([]store.Result, error) {
	return dst, errDown
}

func (down) Close() error { return nil }

// TestDecideAllConformance runs the DecideAll tables through a failover
// store whose shared store (the reference store) is up, and through one
// that is degraded (its shared store down: the probes fail), deciding on
// its local memory store.
func TestDecideAllConformance(t *testing.T) {
	open := func(t *testing.T, shared store.Store, degraded bool) store.Store {
		clk := marching{clock.NewFake(t0)}
		s, err := failover.New(failover.Options{Shared: shared, Fallback: memory.New(memory.Options{Clock: clk}),
			OnFailure: store.FailLocal, Instances: 1, Clock: clk, StartDegraded: degraded})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	t.Run("shared", func(t *testing.T) {
		storetest.RunDecideAll(t, func(t *testing.T) store.Store { return open(t, storetest.NewReference(), false) })
	})
	t.Run("degraded", func(t *testing.T) {
		storetest.RunDecideAll(t, func(t *testing.T) store.Store { return open(t, down{}, true) })
	})
}
