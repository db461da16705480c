package fastfront_test

import (
	"go/build"
	"slices"
	"strings"
	"testing"
)

// TestLayer: the front stands beside httplimit and check, over the
// decision core and the transport, and never imports the gateway that
// composes it (nor anything else above it): it is handed what it needs.
func TestLayer(t *testing.T) {
	const module = "github.com/sluice-rl/sluice/"
	below := []string{"clock", "decision", "policy", "throttle", "internal/fastproxy"}
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range pkg.Imports {
		if rel, ok := strings.CutPrefix(path, module); ok && !slices.Contains(below, rel) {
			t.Errorf("fastfront imports %s; it may import only %v of sluice's packages", path, below)
		}
	}
}
