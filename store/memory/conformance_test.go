package memory

import (
	"testing"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/storetest"
)

// TestConformance runs the conformance suite that every store passes. The
// sweeper's clock never moves, so that no key is swept whatever times the
// tables use.
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return New(Options{Clock: clock.NewFake(t0)})
	})
}

// TestSettleConformance runs the settle tables.
func TestSettleConformance(t *testing.T) {
	storetest.RunSettle(t, func(t *testing.T) store.Store {
		return New(Options{Clock: clock.NewFake(t0)})
	})
}

// TestDecideAllConformance runs the DecideAll tables.
func TestDecideAllConformance(t *testing.T) {
	storetest.RunDecideAll(t, func(t *testing.T) store.Store {
		return New(Options{Clock: clock.NewFake(t0)})
	})
}
