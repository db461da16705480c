package httplimit

import (
	"net/http"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/nethttp"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// KeyFunc gives the key a rule counts a request by (Options.Key): any key
// a program can read from the request, such as a user id its
// authentication put in the context, or several parts combined with
// JoinKey. Requests with the same key count together on that rule,
// whoever sent them; ok false leaves the rule's own key (policy.Rule.Key)
// in force for this request. It is called once per matching rule that
// counts, before the request is decided, with the request as it arrived.
type KeyFunc func(r *http.Request, rule string) (key string, ok bool)

// JoinKey combines parts into one key for a KeyFunc, so that no two
// different lists of parts give the same key: ("a:b", "c") and
// ("a", "b:c") stay apart, as store.Parts keeps them.
func JoinKey(parts ...string) string {
	if len(parts) == 0 {
		return ""
	}
	return store.NewKey(parts[0], parts[1:]...).String()
}

// Refusal is a request the Limiter refused, as Options.Reject is given it.
type Refusal struct {
	// Status is the status the Limiter would answer: 429 (over a rate or
	// concurrency limit), 401 (unknown access key), 400 (a request it
	// cannot count one way only) or 503 (the store or the throttle).
	Status int
	// RetryAfter is the Retry-After of a 429 or 503 (already set on the
	// response's header), 0 otherwise.
	RetryAfter time.Duration
	// Report is what happened to the request: the caller, which rules
	// refused it (Outcome Limited). It is valid only during the call.
	Report *Report
	// Problem is the application/problem+json body the Limiter would
	// write. It is valid only during the call.
	Problem []byte
}

// refusalWriter is the ResponseWriter Options.Reject writes to: it keeps
// the status written, for OnResponse and the after steps.
type refusalWriter struct {
	http.ResponseWriter
	status int
}

func (w *refusalWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusalWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap returns the ResponseWriter beneath, for http.ResponseController.
func (w *refusalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// reject writes a refusal by Options.Reject: the Limiter's header fields
// (RateLimit, Retry-After, Cache-Control; not its Content-Type, the body
// being the hook's), then whatever the hook writes. A hook that writes
// nothing leaves the Limiter's status with an empty body. It returns the
// status written.
func (l *Limiter) reject(w http.ResponseWriter, r *http.Request, ref *Refusal, fields []decision.Field) int {
	h := w.Header()
	nethttp.SetFields(h, fields)
	delete(h, "Content-Type")
	rw := &refusalWriter{ResponseWriter: w}
	l.opts.Reject(rw, r, ref)
	if rw.status == 0 {
		h["Content-Length"] = []string{"0"}
		rw.WriteHeader(ref.Status)
	}
	return rw.status
}

// scrubSkipped removes from a request Options.Skip lets through undecided
// the fields a caller must never pass on: ClientHeader, which only sluice
// writes, and the method-override headers, in every spelling
// (policy.RemovedHeader), as a decided request loses them.
func scrubSkipped(h http.Header) {
	for name := range h {
		if policy.RemovedHeader(name) {
			delete(h, name)
		}
	}
}
