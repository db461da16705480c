package doccheck

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestLibraryGoIsFromExamples: every Go block of docs/library.md is an
// excerpt of the example test file linked last before it: each of its
// lines is a line of that file, so what the guide shows compiles and runs
// under `go test` (an excerpt, unlike the README's whole functions).
func TestLibraryGoIsFromExamples(t *testing.T) {
	doc := filepath.Join(root, "docs", "library.md")
	eachGoBlock(t, doc, filepath.Dir(doc), func(at int, code, file string, src []byte) {
		lines := map[string]bool{}
		for _, l := range strings.Split(string(src), "\n") {
			lines[strings.TrimSpace(l)] = true
		}
		for _, l := range strings.Split(code, "\n") {
			if l = strings.TrimSpace(l); l != "" && !lines[l] {
				t.Errorf("docs/library.md, block before byte %d: %q is not a line of %s", at, l, file)
			}
		}
	})
}
