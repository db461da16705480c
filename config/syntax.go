package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"
)

// MaxFileSize is the largest configuration file accepted, in bytes.
const MaxFileSize = 1 << 20

// parseYAML checks that data is UTF-8 text holding one YAML document and
// returns the document's top node (nil for an empty document).
func parseYAML(file string, data []byte) (*yaml.Node, Errors) {
	whole := func(format string, args ...any) Errors {
		return Errors{{File: file, Msg: fmt.Sprintf(format, args...)}}
	}
	if len(data) > MaxFileSize {
		return nil, whole("file is larger than 1 MiB (a configuration file is at most %d bytes)", MaxFileSize)
	}
	if e := checkText(file, data); e != nil {
		return nil, Errors{e}
	}
	first, second, err := decodeDocs(data)
	if err != nil {
		return nil, Errors{syntaxError(file, data, err)}
	}
	if second != nil && !isEmptyDoc(second) {
		return nil, Errors{{File: file, Line: second.Line, Col: second.Column,
			Msg: "a second YAML document (the file must hold one document: remove this '---' and what follows)"}}
	}
	if first == nil || isEmptyDoc(first) {
		return nil, nil
	}
	return first.Content[0], nil
}

// parseRoot parses data (name is the file name used in errors) and
// returns its top node and a decoder for it, the aliases checked; an empty
// file is an error naming the required fields.
func parseRoot(name string, data []byte, required string) (*yaml.Node, *decoder, error) {
	root, errs := parseYAML(name, data)
	if errs != nil {
		return nil, nil, errs
	}
	if root == nil {
		return nil, nil, Errors{{File: name, Msg: "empty file (required: " + required + ")"}}
	}
	d := newDecoder(name)
	d.checkAliases(root)
	return root, d, nil
}

// decodeDocs decodes the first two documents of data. A panic inside the
// YAML library becomes an error: no input may crash a reload.
func decodeDocs(data []byte) (first, second *yaml.Node, err error) {
	defer func() {
		if r := recover(); r != nil {
			first, second, err = nil, nil, fmt.Errorf("yaml: parser failed: %v", r)
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var docs [2]*yaml.Node
	for i := range docs {
		var n yaml.Node
		if err := dec.Decode(&n); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, err
		}
		docs[i] = &n
	}
	return docs[0], docs[1], nil
}

func isEmptyDoc(doc *yaml.Node) bool {
	return len(doc.Content) == 0 || isNull(doc.Content[0])
}

// checkText reports the first byte sequence that is not printable UTF-8
// text (NUL and other control characters, invalid UTF-8), with its position.
func checkText(file string, data []byte) *Error {
	line, col := 1, 0
	for i := 0; i < len(data); {
		if n := lineBreak(data, i); n > 0 {
			line, col, i = line+1, 0, i+n
			continue
		}
		r, size := utf8.DecodeRune(data[i:])
		col++
		switch {
		case r == utf8.RuneError && size <= 1:
			return &Error{File: file, Line: line, Col: col, Msg: fmt.Sprintf("byte 0x%02x is not UTF-8 text (a configuration file is UTF-8 text)", data[i])}
		case r == '\t' || (r == 0xFEFF && i == 0):
		case r < 0x20 || r >= 0x7F && r < 0xA0 || r == 0xFEFF || r == 0xFFFE || r == 0xFFFF:
			return &Error{File: file, Line: line, Col: col, Msg: fmt.Sprintf("control character %U (a configuration file is printable text)", r)}
		}
		i += size
	}
	return nil
}

// locateLimit is the largest file whose syntax errors are located by
// searching; real configuration files are a few kilobytes.
const locateLimit = 128 << 10

var yamlLine = regexp.MustCompile(`^(?:yaml: )?(?:line (\d+): )?`)

// yamlProblem strips the "yaml: line N: " prefix from a YAML library error.
func yamlProblem(err error) string {
	return yamlLine.ReplaceAllString(err.Error(), "")
}

// syntaxError turns a YAML syntax error into an Error at the place where
// the file stops being valid YAML. The library's own line is often that of
// the enclosing block, and it gives no column, so the place is found by
// parsing ever longer prefixes of the file: the first prefix that fails with
// the same problem ends at it.
//
// Each probe parses up to the whole file, and a search takes about twenty,
// so files over locateLimit get the library's line instead.
func syntaxError(file string, data []byte, err error) *Error {
	problem := yamlProblem(err)
	if len(data) > locateLimit {
		e := &Error{File: file, Msg: "YAML syntax: " + problem + hint(problem)}
		if m := yamlLine.FindStringSubmatch(err.Error()); m[1] != "" {
			e.Line, _ = strconv.Atoi(m[1])
		}
		if starts := lineStarts(data); e.Line >= 1 && e.Line <= len(starts) {
			nameTab(e, data[starts[e.Line-1]:lineEnd(starts, e.Line-1, len(data))])
		}
		return e
	}
	fails := func(n int) bool {
		_, _, err := decodeDocs(data[:n])
		return err != nil && yamlProblem(err) == problem
	}
	starts := lineStarts(data)
	// The smallest number of whole lines that fails.
	k := sort.Search(len(starts), func(i int) bool { return fails(lineEnd(starts, i, len(data))) })
	e := &Error{File: file, Msg: "YAML syntax: " + problem + hint(problem)}
	if k == len(starts) {
		return e
	}
	e.Line = k + 1
	// The smallest number of characters of that line that fails.
	from, to := starts[k], lineEnd(starts, k, len(data))
	offs := runeEnds(data[from:to])
	c := sort.Search(len(offs), func(i int) bool { return fails(from + offs[i]) })
	if c == len(offs) {
		c = firstNonBlank(data[from:to])
	}
	e.Col = c + 1
	nameTab(e, data[from:to])
	return e
}

// nameTab rewrites e, a syntax error at line, as a tab in the indentation
// when line is indented with one: the YAML library's words for such a tab
// ("found character that cannot start any token") do not name it.
func nameTab(e *Error, line []byte) {
	if tab := indentTab(line); tab >= 0 {
		e.Col = tab + 1
		e.Msg = fmt.Sprintf("YAML syntax: a tab in the indentation at line %d: YAML indents with spaces only (replace the tab with spaces)", e.Line)
	}
}

// indentTab returns the 0-based column of the first tab in the blanks that
// begin line, or -1 if there is none.
func indentTab(line []byte) int {
	for i, b := range line {
		switch b {
		case '\t':
			return i
		case ' ':
		default:
			return -1
		}
	}
	return -1
}

// hint adds advice to the YAML problems people run into most.
func hint(problem string) string {
	switch {
	case strings.Contains(problem, "tab character"):
		return " (indent with spaces, not tabs)"
	case strings.Contains(problem, "mapping values are not allowed"):
		return " (check the indentation; quote a value that contains \": \" or ends with ':')"
	}
	return ""
}

// lineBreak returns the length of the line break at data[i], 0 if there is
// none. Like YAML, it counts CR LF, CR, LF, NEL, LS and PS as line breaks.
func lineBreak(data []byte, i int) int {
	rest := data[i:]
	switch {
	case bytes.HasPrefix(rest, []byte("\r\n")):
		return 2
	case rest[0] == '\r' || rest[0] == '\n':
		return 1
	case bytes.HasPrefix(rest, []byte("\u0085")):
		return 2
	case bytes.HasPrefix(rest, []byte("\u2028")) || bytes.HasPrefix(rest, []byte("\u2029")):
		return 3
	}
	return 0
}

// lineStarts returns the offset of the start of each line of data.
func lineStarts(data []byte) []int {
	starts := []int{0}
	for i := 0; i < len(data); {
		if n := lineBreak(data, i); n > 0 {
			i += n
			if i < len(data) {
				starts = append(starts, i)
			}
			continue
		}
		i++
	}
	return starts
}

// lineEnd returns the offset just after line i, its newline included.
func lineEnd(starts []int, i, size int) int {
	if i+1 < len(starts) {
		return starts[i+1]
	}
	return size
}

// runeEnds returns, for each character of line, the offset just after it.
func runeEnds(line []byte) []int {
	var ends []int
	for i := 0; i < len(line); {
		_, size := utf8.DecodeRune(line[i:])
		i += size
		ends = append(ends, i)
	}
	return ends
}

// firstNonBlank returns the 0-based column of the first character of line
// that is not a space or a tab.
func firstNonBlank(line []byte) int {
	col := 0
	for _, r := range string(line) {
		if r != ' ' && r != '\t' {
			return col
		}
		col++
	}
	return 0
}
