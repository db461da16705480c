package storetest

import (
	"slices"
	"testing"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// TestDecideAllReference runs the DecideAll tables on the reference store
// itself: its decisions must match the tables' hand-worked parts.
func TestDecideAllReference(t *testing.T) {
	RunDecideAll(t, func(t *testing.T) store.Store { return NewReference() })
}

// TestDecideAllSupportedSkipsOnlyUnsupported: with the window algorithms
// only, the tables that hold requests of a token_bucket are skipped and
// every other runs; with every algorithm, every table runs.
func TestDecideAllSupportedSkipsOnlyUnsupported(t *testing.T) {
	windows := func(a limiter.Algorithm) bool { return a == limiter.FixedWindow || a == limiter.SlidingWindow }
	every := func(limiter.Algorithm) bool { return true }
	var skipped []string
	for _, tb := range AllTables() {
		if !tb.supported(every) {
			t.Errorf("%s: skipped with every algorithm supported", tb.Name)
		}
		if !tb.supported(windows) {
			skipped = append(skipped, tb.Name)
		}
	}
	if want := []string{"all/delay", "all/delay_shadow"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped %v with the window algorithms, want %v", skipped, want)
	}
}
