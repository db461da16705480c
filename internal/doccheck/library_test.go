package doccheck

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// packageClause is the first line of a Go file.
var packageClause = regexp.MustCompile(`\Apackage \w+\n`)

// TestLibraryGoIsExamples: every Go block of docs/library.md is the whole
// example test file linked last before it but for its package clause (its
// imports and its one Example function), so what the guide shows compiles
// as pasted (under a package line) and runs under `go test`.
func TestLibraryGoIsExamples(t *testing.T) {
	doc := filepath.Join(root, "docs", "library.md")
	eachGoBlock(t, doc, filepath.Dir(doc), func(at int, code, file string, src []byte) {
		body := packageClause.ReplaceAllString(string(src), "")
		if !packageClause.Match(src) || strings.TrimSpace(body) != strings.TrimSpace(code) {
			t.Errorf("docs/library.md's Go block before byte %d is not the whole of %s but its package clause (copy it again):\n%s", at, file, code)
		}
		if strings.Count(code, "\nfunc Example") != 1 || !strings.HasPrefix(code, "import") {
			t.Errorf("docs/library.md's Go block copied from %s is not an import list and one Example function", file)
		}
	})
}
