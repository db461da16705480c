package config_test

import (
	"testing"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/store/memory"
)

// TestMemoryDefaults keeps the memory store's bounds that config writes
// out as its own defaults (so as not to import the store) equal to the
// store's.
func TestMemoryDefaults(t *testing.T) {
	for name, c := range map[string][2]int{
		"DefaultMaxKeys":       {config.DefaultMaxKeys, memory.DefaultMaxKeys},
		"DefaultMaxRLSKeys":    {config.DefaultMaxRLSKeys, memory.DefaultMaxGuestKeys},
		"DefaultMaxLogEntries": {config.DefaultMaxLogEntries, memory.DefaultMaxLogEntries},
	} {
		if c[0] != c[1] {
			t.Errorf("config.%s is %d, the memory store's %d", name, c[0], c[1])
		}
	}
}
