package failover_test

import (
	"testing"

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
