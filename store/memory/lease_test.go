package memory

import (
	"testing"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/store/storetest"
)

// TestLeaseConformance runs the lease suite that every store passes.
func TestLeaseConformance(t *testing.T) {
	storetest.RunLeases(t, func(t *testing.T) storetest.LeaseStore {
		return New(Options{Clock: clock.NewFake(t0)})
	})
}
