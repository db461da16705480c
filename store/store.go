// Package store defines where sluice keeps the state of each limited key:
// the Store interface (an atomic decide-and-update per key), the encoding of
// keys, and the errors stores share. The algorithms live in package limiter;
// a store supplies atomicity and persistence, never the math.
package store

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// Store decides requests against per-key limits, atomically per key.
type Store interface {
	// Decide applies a request of cost to key under limit at now and returns
	// the decision. The read, the algorithm and the write happen as one
	// step: concurrent callers on one key never both spend the same unit.
	// Over the limit is a decision, not an error; an error means the store
	// could not decide (unreachable, timed out, closed).
	Decide(ctx context.Context, key string, limit limiter.Limit, now time.Time, cost int64) (limiter.Decision, error)

	// DecideBatch decides several requests, each on its own key, in order,
	// and returns one result per request. Stores that talk over a network
	// do it in one round trip. It is not a transaction: each request is
	// decided independently.
	DecideBatch(ctx context.Context, reqs []Request, now time.Time) ([]Result, error)

	// Close releases the store's resources and stops its goroutines.
	Close() error
}

// Request is one decision asked of DecideBatch.
type Request struct {
	Key   string
	Limit limiter.Limit
	Cost  int64
}

// Result is the answer to one Request: a decision, or why there is none.
type Result struct {
	Decision limiter.Decision
	Err      error
}

// ErrClosed is returned by a store used after Close.
var ErrClosed = errors.New("store: closed")

// ErrFull is returned when a bounded store has no room for a new key and
// cannot make any without forgetting a key that is being limited.
var ErrFull = errors.New("store: full: every key is being limited")

// UnavailableError is returned by a store whose failure policy is to refuse
// requests while its shared counters cannot be reached (on_failure: closed):
// the caller should answer 503 with RetryAfter.
type UnavailableError struct {
	RetryAfter time.Duration
	Err        error
}

func (e *UnavailableError) Error() string { return "store: unavailable: " + e.Err.Error() }

// Unwrap returns the failure behind e.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Key encodes a rule name and the parts that identify a caller (a client id,
// an IP prefix, a header value) as one store key. Each element is written
// as its length, a colon and its bytes, so no two different inputs give the
// same key: ("a_b", "c") and ("a", "b_c") stay apart.
func Key(rule string, parts ...string) string {
	n := len(rule) + 4
	for _, p := range parts {
		n += len(p) + 4
	}
	var b strings.Builder
	b.Grow(n)
	writePart(&b, rule)
	for _, p := range parts {
		writePart(&b, p)
	}
	return b.String()
}

func writePart(b *strings.Builder, s string) {
	b.WriteString(strconv.Itoa(len(s)))
	b.WriteByte(':')
	b.WriteString(s)
}
