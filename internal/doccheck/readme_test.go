package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const root = "../.."

// goBlock is a ```go block of README.md with the last link to a Go test
// file before it: the example it copies.
var (
	goBlock  = regexp.MustCompile("(?s)```go\n(.*?)```")
	testLink = regexp.MustCompile(`\]\(([\w/.-]+_test\.go)\)`)
)

// TestReadmeGoIsExamples: every Go block of README.md is a verbatim part
// of the example test file linked just before it, so what the README shows
// compiles and runs under `go test`.
func TestReadmeGoIsExamples(t *testing.T) {
	eachGoBlock(t, filepath.Join(root, "README.md"), root, func(at int, code, file string, src []byte) {
		if !strings.Contains(string(src), code) {
			t.Errorf("README.md's Go block before byte %d is not a copy of part of %s (copy it again):\n%s", at, file, code)
		}
		if !strings.Contains(code, "func Example") {
			t.Errorf("README.md's Go block copied from %s holds no Example function", file)
		}
	})
}

// eachGoBlock calls check with every ```go block of the document doc, the
// byte it ends at, and the example test file linked last before it (its
// path taken from base) with that file's text. A document without a Go
// block, a block without a link before it and a link to a file that
// cannot be read fail the test.
func eachGoBlock(t *testing.T, doc, base string, check func(at int, code, file string, src []byte)) {
	t.Helper()
	text, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	name := filepath.Base(doc)
	blocks := goBlock.FindAllSubmatchIndex(text, -1)
	if len(blocks) == 0 {
		t.Fatalf("%s has no ```go block", name)
	}
	for _, b := range blocks {
		code := string(text[b[2]:b[3]])
		links := testLink.FindAllSubmatch(text[:b[0]], -1)
		if len(links) == 0 {
			t.Errorf("%s Go block at byte %d links no example test file before it:\n%s", name, b[0], code)
			continue
		}
		file := filepath.Join(base, string(links[len(links)-1][1]))
		src, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%s links %s: %v", name, file, err)
			continue
		}
		check(b[1], code, file, src)
	}
}

// TestUserDocsWording: user documentation speaks of sluice, not of the
// project's tracker. Links are not read: a link to another project's
// issue (an anchor the docs cite, such as an Envoy bug) is a reference,
// not tracker talk.
func TestUserDocsWording(t *testing.T) {
	link := regexp.MustCompile(`https?://[^\s)>\]]+`)
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	for _, f := range []string{"README.md", "CHANGELOG.md", "SECURITY.md", "CONTRIBUTING.md"} {
		files = append(files, filepath.Join(root, f))
	}
	tracker := regexp.MustCompile(`(?i)\b(issues?|ticket)\b`)
	for _, f := range files {
		text, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(text), "\n") {
			if m := tracker.FindString(link.ReplaceAllString(line, "")); m != "" {
				t.Errorf("%s:%d: %q in user documentation: %s", filepath.Base(f), i+1, m, line)
			}
		}
	}
}

// TestSetupCommandsAgree: CONTRIBUTING.md's set-up commands are the
// README's, word for word.
func TestSetupCommandsAgree(t *testing.T) {
	first := func(name string) string {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		_, rest, ok := strings.Cut(string(b), "```sh\n")
		block, _, closed := strings.Cut(rest, "```")
		if !ok || !closed {
			t.Fatalf("%s has no sh block", name)
		}
		return block
	}
	if r, c := first("README.md"), first("CONTRIBUTING.md"); r != c {
		t.Errorf("CONTRIBUTING.md's set-up commands differ from the README's:\n%s\nREADME.md:\n%s", c, r)
	}
}

// TestNoMergeMarkers: no text file of the repository holds the markers an
// unresolved merge leaves (a past merge once left two sections of
// docs/operations.md between them).
func TestNoMergeMarkers(t *testing.T) {
	marker := regexp.MustCompile(`(?m)^(<{7}|>{7})( |$)`)
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); name == ".git" || name == "node_modules" || name == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".yaml", ".yml", ".sh", ".lua", ".html", ".js", ".css", ".conf", ".json", ".txt":
		default:
			return nil
		}
		text, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if loc := marker.FindIndex(text); loc != nil {
			t.Errorf("%s:%d: an unresolved merge's marker", path, 1+strings.Count(string(text[:loc[0]]), "\n"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
