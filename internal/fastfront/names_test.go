package fastfront

import (
	"bufio"
	"fmt"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// manyNames parses a request carrying n distinct header field names, as a
// caller can send within the 64 KiB header limit.
func manyNames(tb testing.TB, n int) *fasthttp.RequestHeader {
	tb.Helper()
	var b strings.Builder
	b.WriteString("GET / HTTP/1.1\r\nHost: x\r\n")
	for i := range n {
		fmt.Fprintf(&b, "X%d: 1\r\n", i)
	}
	b.WriteString("\r\n")
	var h fasthttp.RequestHeader
	if err := h.Read(bufio.NewReaderSize(strings.NewReader(b.String()), 1<<20)); err != nil {
		tb.Fatal(err)
	}
	return &h
}

// Names lists every field's name (a name may repeat: the decision core
// needs no more), and so it is linear in the fields: a caller's 9,000
// distinct names, which fit in the 64 KiB header limit, cost it
// microseconds (BenchmarkFastHeadersNames), where comparing each name
// with every one listed before it was quadratic in them and let a dozen
// such requests a second take a core whatever the limits said.
func TestFastHeadersNamesAll(t *testing.T) {
	h := manyNames(t, 100)
	names := (*fastHeaders)(h).Names(nil)
	seen := map[string]bool{}
	for _, n := range names {
		seen[strings.ToLower(n)] = true
	}
	for i := range 100 {
		if !seen[fmt.Sprintf("x%d", i)] {
			t.Fatalf("Names lacks X%d: %v", i, names)
		}
	}
}

// go test -run '^$' -bench FastHeadersNames -benchtime 20x ./gateway/
func BenchmarkFastHeadersNames(b *testing.B) {
	h := manyNames(b, 9000)
	var dst []string
	for b.Loop() {
		dst = (*fastHeaders)(h).Names(dst[:0])
	}
}
