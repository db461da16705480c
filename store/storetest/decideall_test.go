package storetest

import (
	"testing"

	"github.com/sluice-rl/sluice/store"
)

// TestDecideAllReference runs the DecideAll tables on the reference store
// itself: its decisions must match the tables' hand-worked parts.
func TestDecideAllReference(t *testing.T) {
	RunDecideAll(t, func(t *testing.T) store.Store { return NewReference() })
}
