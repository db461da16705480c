package fastfront

import (
	"bufio"
	"fmt"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/decision"
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

// The names setFields sets without normalising them are what fasthttp's
// own normalising makes of them, and an answer's header block is byte for
// byte the one SetBytesV writes, other names included.
func TestSetFieldsAsSetBytesV(t *testing.T) {
	fields := []decision.Field{{Name: "RateLimit-Policy", Value: []byte(`"bench";q=1;w=86400`)},
		{Name: "RateLimit", Value: []byte(`"bench";r=0;t=5`)}, {Name: "Retry-After", Value: []byte("5")},
		{Name: "Content-Type", Value: []byte("application/problem+json")}, {Name: "Cache-Control", Value: []byte("no-store")},
		{Name: RequestIDHeader, Value: []byte("abc")}, {Name: "x-other-FIELD", Value: []byte("1")}}
	var want, got fasthttp.ResponseHeader
	for _, f := range fields {
		want.SetBytesV(f.Name, f.Value)
	}
	setFields(&got, fields)
	if w, g := want.String(), got.String(); w != g {
		t.Errorf("setFields wrote\n%q\nwant (SetBytesV)\n%q", g, w)
	}
	for i, name := range []string{"RateLimit-Policy", "RateLimit", "Retry-After", "Content-Type", "Cache-Control", RequestIDHeader} {
		if string(canonicalName(name)) != string(canonicalNames[i]) || len(canonicalNames[i]) != len(name) {
			t.Errorf("canonicalName(%q) = %q", name, canonicalName(name))
		}
	}
}

// BenchmarkSetFields sets a 429's fields on an answer's header, as
// setFields does (Canonical) and field by field with SetBytesV (BytesV).
//
//	go test -run XXX -bench SetFields -benchmem ./internal/fastfront/
func BenchmarkSetFields(b *testing.B) {
	fields := []decision.Field{{Name: "RateLimit-Policy", Value: []byte(`"bench";q=1;w=86400`)},
		{Name: "RateLimit", Value: []byte(`"bench";r=0;t=24483`)}, {Name: "Retry-After", Value: []byte("24483")},
		{Name: "Content-Type", Value: []byte("application/problem+json")}, {Name: "Cache-Control", Value: []byte("no-store")}}
	var h fasthttp.ResponseHeader
	b.Run("Canonical", func(b *testing.B) {
		for b.Loop() {
			h.Reset()
			setFields(&h, fields)
		}
	})
	b.Run("BytesV", func(b *testing.B) {
		for b.Loop() {
			h.Reset()
			for _, f := range fields {
				h.SetBytesV(f.Name, f.Value)
			}
		}
	})
}
