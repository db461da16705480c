// Package store defines where sluice keeps the state of each limited key:
// the Store interface (an atomic decide-and-update per key, and the rules
// of one request decided all or nothing as one step the store owns;
// LookThenSpend for the one place that cannot, inturn.go), the Key every
// store is asked on (structure a store reads without parsing, encoded
// once as it is made, key.go), the Leaser interface for concurrency limits
// (requests in flight held as leases that expire unless renewed, lease.go)
// and the Renewer that renews an instance's leases, and the errors stores
// share. The algorithms live in package limiter; a store supplies
// atomicity and persistence, never the math.
package store

import (
	"context"
	"errors"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// Store decides requests against per-key limits. It owns the operation:
// the read, the algorithm and the write of a key happen as one step, and
// the rules of one HTTP request are decided together, all or nothing.
type Store interface {
	// Decide applies a request of cost to key under limit at now and returns
	// the decision, as one step: concurrent callers on one key never both
	// spend the same unit. Over the limit is a decision, not an error; an
	// error means the store could not decide (unreachable, timed out,
	// closed).
	Decide(ctx context.Context, key Key, limit limiter.Limit, now time.Time, cost int64) (limiter.Decision, error)

	// DecideAll decides the requests of one HTTP request (one per
	// matching rule) together and appends one result per request to dst:
	// if every request not marked Shadow is allowed, every allowed request
	// spends; otherwise none spends, the denied requests answer their
	// denial and the others a look (cost 0) at their key. A key asked
	// twice sees its first request. A zero Limit and a negative cost are
	// denied, as limiter.Decide denies them. An error means the store
	// could not decide, as for Decide; nothing was spent then, unless the
	// store says otherwise (a Redis Cluster whose keys of one request live
	// on different nodes decides them by LookThenSpend, not atomically).
	DecideAll(ctx context.Context, dst []Result, reqs []Request, now time.Time) ([]Result, error)

	// DecideEach decides requests each on its own, in order, as Decide
	// would one after the other, and appends one result per request to
	// dst (Envoy's descriptors, sluice.Limiter's keys). Stores that talk
	// over a network do it in one round trip. Shadow is ignored.
	DecideEach(ctx context.Context, dst []Result, reqs []Request, now time.Time) ([]Result, error)

	// Close releases the store's resources and stops its goroutines.
	Close() error
}

// Request is one decision asked of DecideAll or DecideEach.
type Request struct {
	Key   Key
	Limit limiter.Limit
	Cost  int64
	// Shadow marks a shadow rule's request for DecideAll: it is decided,
	// but its denial stops no other request. DecideEach ignores it.
	Shadow bool
}

// Result is the answer to one Request: a decision, or why there is none.
type Result struct {
	Decision limiter.Decision
	Err      error
	// Shared reports that the decision was made on a counter the key
	// shares with other keys, not on its own: the memory or gossip
	// store's overflow counter of the key's rule and limit, where the keys
	// it has no room for count together. A denial then says that those keys spent the
	// limit, not that this one did.
	Shared bool
}

// ErrClosed is returned by a store used after Close.
var ErrClosed = errors.New("store: closed")

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
