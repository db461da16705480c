// Package nethttp is the net/http side of package decision, written once
// for the fronts that serve net/http (httplimit's middleware, check's
// /check): an http.Header read as decision.Headers, a Verdict's fields set
// on an answer, and the application/problem+json answer. Package decision
// itself stays without net/http; the gateway's fasthttp front has its own
// (internal/fastproxy).
package nethttp

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/sluice-rl/sluice/decision"
)

// Header is an http.Header as the decision Engine reads fields: its keys
// are canonical, as the Engine asks for them.
type Header http.Header

var _ decision.Headers = Header(nil)

// Values appends the values of the field lines named name.
func (h Header) Values(dst []string, name string) []string { return append(dst, h[name]...) }

// Names appends the name of every field, as the map keeps it.
func (h Header) Names(dst []string) []string {
	for k := range h {
		dst = append(dst, k)
	}
	return dst
}

// SetFields sets a Verdict's fields on h, a later one replacing an earlier
// one of the same name, copied (h outlives the Verdict, whose bytes are
// not valid after Finish) into one string that their values share.
func SetFields(h http.Header, fields []decision.Field) {
	n := 0
	for _, f := range fields {
		n += len(f.Value)
	}
	var b strings.Builder
	b.Grow(n)
	for _, f := range fields {
		b.Write(f.Value)
	}
	all := b.String()
	for _, f := range fields {
		h[f.Name] = []string{all[:len(f.Value)]}
		all = all[len(f.Value):]
	}
}

// Problem returns the application/problem+json body of an answer of
// status (its title the status's reason phrase) saying detail.
func Problem(status int, detail string) []byte {
	return decision.AppendProblem(make([]byte, 0, 256), status, http.StatusText(status), detail)
}

// WriteProblem writes body (Problem's) as an application/problem+json
// answer of status, with Cache-Control: no-store and its Content-Length.
// Fields already set on w (Retry-After, RateLimit) are kept.
func WriteProblem(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = []string{"application/problem+json"}
	h["Cache-Control"] = []string{"no-store"}
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}
