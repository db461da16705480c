package fastproxy_test

import (
	"go/build"
	"path/filepath"
	"strings"
	"testing"
)

// TestLeaf: fastproxy is handed what it needs and imports no sluice
// package but internal ones that import no sluice package themselves, so
// that a request on the transport never climbs into the decision core or
// the policy beneath it, and their changes never reach it.
func TestLeaf(t *testing.T) {
	const module = "github.com/sluice-rl/sluice"
	pkg, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range pkg.Imports {
		if path != module && !strings.HasPrefix(path, module+"/") {
			continue
		}
		rel, ok := strings.CutPrefix(path, module+"/internal/")
		if !ok {
			t.Errorf("fastproxy imports %s, which stands above it (hand in what it needs)", path)
			continue
		}
		dep, err := build.ImportDir(filepath.Join("..", rel), 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range dep.Imports {
			if p == module || strings.HasPrefix(p, module+"/") {
				t.Errorf("fastproxy imports %s, which imports %s: not a leaf", path, p)
			}
		}
	}
}
