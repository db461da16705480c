package limiter_test

import (
	"testing"

	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/storetest"
)

// TestConformance runs the store conformance suite against the reference
// store, limiter.Decide behind one mutex: the suite's tables are the
// algorithms' time-step tests.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(*testing.T) store.Store { return storetest.NewReference() })
}

// TestSettleConformance runs the settle tables against the reference store.
func TestSettleConformance(t *testing.T) {
	storetest.RunSettle(t, func(*testing.T) store.Store { return storetest.NewReference() })
}
