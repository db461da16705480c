package doccheck

import (
	"os"
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
	text, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	blocks := goBlock.FindAllSubmatchIndex(text, -1)
	if len(blocks) == 0 {
		t.Fatal("docs/library.md has no ```go block")
	}
	for _, b := range blocks {
		code := string(text[b[2]:b[3]])
		links := testLink.FindAllSubmatch(text[:b[0]], -1)
		if len(links) == 0 {
			t.Errorf("docs/library.md Go block at byte %d links no example test file before it:\n%s", b[0], code)
			continue
		}
		file := filepath.Join(filepath.Dir(doc), string(links[len(links)-1][1]))
		src, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("docs/library.md links %s: %v", file, err)
			continue
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(string(src), "\n") {
			lines[strings.TrimSpace(l)] = true
		}
		for _, l := range strings.Split(code, "\n") {
			if l = strings.TrimSpace(l); l != "" && !lines[l] {
				t.Errorf("docs/library.md, block before byte %d: %q is not a line of %s", b[1], l, file)
			}
		}
	}
}
