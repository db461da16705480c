package store

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// Leaser is implemented by stores that count requests in flight: a
// concurrency rule (at most Max of one caller's requests at once) holds a
// lease on its key from admission until the response ends. A lease lives
// for its TTL unless renewed, so that the slots of a holder that dies
// without releasing (an instance killed, a lost release) come back within
// the TTL; a holder keeps a long request's lease by renewing it (see
// Renewer).
//
// Expiry is judged at the now passed to each call, as the rate algorithms
// judge time: a lease acquired at t counts while now < t + TTL, and a
// renewal at t' makes that t' + TTL. A now earlier than a lease's
// acquisition (a clock gone back) expires nothing, and brings back no
// lease that a later now saw expire. The Redis store reads
// Redis TIME instead of now, its one time authority.
type Leaser interface {
	// Acquire asks for a lease of cost slots on key under limit at now.
	// Allowed, it holds them until Release or until the lease expires;
	// over the limit it is a decision, not an error (LeaseDecision). An
	// error means the store could not decide.
	Acquire(ctx context.Context, key Key, limit Concurrency, now time.Time, cost int64) (LeaseDecision, error)

	// Release gives a lease's slots back at now. Releasing a lease that
	// has expired, or was released before, or the zero Lease does nothing:
	// it never frees another lease's slot. An error means the store could
	// not be told; the lease then expires by itself.
	Release(ctx context.Context, lease Lease, now time.Time) error

	// Renew makes each lease that still holds its slots at now hold them
	// for its TTL from now (never sooner than it would have expired), in
	// one round trip for a store over a network, and reports for each
	// whether it did: false for a lease that had expired (its slots may
	// have gone to another request), was released, or is the zero Lease.
	// An error means the store could not be asked about some or all of
	// them: those are reported false, and may still be held.
	Renew(ctx context.Context, leases []Lease, now time.Time) ([]bool, error)
}

// Limits of a Concurrency.
const (
	// MaxConcurrency is the largest Concurrency.Max: 2^50, far above any
	// real concurrency, and low enough that every sum Redis's scripts form
	// (they count in doubles) stays an exact integer.
	MaxConcurrency = 1 << 50
	// MinLeaseTTL and MaxLeaseTTL bound Concurrency.TTL: Redis expires
	// keys to the millisecond, and a lease outliving its holder by more
	// than a day would keep a caller out for that long.
	MinLeaseTTL = time.Millisecond
	MaxLeaseTTL = 24 * time.Hour
	// DefaultLeaseTTL is a lease's TTL when a rule does not choose one: a
	// dead instance's slots are back within 30 seconds, and a Renewer
	// ticking every 10 seconds keeps a live one's leases through two
	// missed renewals.
	DefaultLeaseTTL = 30 * time.Second
	// LeaseRetryAfter is a denied lease's RetryAfter while the cost fits
	// the limit. A slot frees when a request in flight ends, which no
	// store can foresee (a lease's expiry says when a dead holder's slots
	// come back, not when a live one's request ends), so the estimate is
	// a constant: one second, the least a Retry-After header can say.
	LeaseRetryAfter = time.Second
)

// Concurrency is a concurrency limit: at most Max slots of one key in
// flight at once, each lease expiring TTL after it was acquired or last
// renewed. The zero Concurrency denies every request (Max 0), like the
// zero limiter.Limit; use Check before handing a limit to a store.
type Concurrency struct {
	// Max is the most slots in flight, 0 <= Max <= MaxConcurrency (0
	// denies every request).
	Max int64
	// TTL is a lease's life without renewal, MinLeaseTTL <= TTL <=
	// MaxLeaseTTL; zero means DefaultLeaseTTL.
	TTL time.Duration
}

// Check reports whether c is a limit every store can keep, with an error
// that says what was wrong and what would be accepted.
func (c Concurrency) Check() error {
	if c.Max < 0 || c.Max > MaxConcurrency {
		return fmt.Errorf("store: concurrency %d out of range: want 0 to 2^50 (%d)", c.Max, int64(MaxConcurrency))
	}
	if ttl := c.LeaseTTL(); ttl < MinLeaseTTL || ttl > MaxLeaseTTL {
		return fmt.Errorf("store: lease TTL %v out of range: want %v to %v (0 means %v)", c.TTL, MinLeaseTTL, MaxLeaseTTL, DefaultLeaseTTL)
	}
	return nil
}

// LeaseTTL returns c.TTL, or DefaultLeaseTTL if it is zero.
func (c Concurrency) LeaseTTL() time.Duration {
	if c.TTL == 0 {
		return DefaultLeaseTTL
	}
	return c.TTL
}

// Lease is the handle of an acquired lease, for Release and Renew. It is a
// comparable value; the zero Lease holds nothing.
type Lease struct {
	// Key is where the store holds the lease: the key it was acquired on,
	// or, in a memory store that had no room for that key, the overflow
	// key that its rule's keys share.
	Key Key
	// ID names the lease among the key's, unique per store instance and
	// across the instances sharing a Redis.
	ID string
	// Cost is how many slots it holds.
	Cost int64
	// TTL is its life from each acquisition or renewal.
	TTL time.Duration
}

// IsZero reports whether l is the zero Lease, which holds nothing.
func (l Lease) IsZero() bool { return l == Lease{} }

// LeaseDecision is the answer to Acquire.
type LeaseDecision struct {
	// Allowed reports whether the lease was granted.
	Allowed bool
	// Limit is the limit's Max.
	Limit int64
	// InFlight is how many slots of the key are held after the decision,
	// this lease's included when it was granted. It can exceed Limit after
	// the limit was lowered, until enough leases end.
	InFlight int64
	// RetryAfter is zero when allowed; when denied, limiter.Never if the
	// cost exceeds Limit (it can never fit), else LeaseRetryAfter.
	RetryAfter time.Duration
	// Lease is the granted lease, to release when the request ends; the
	// zero Lease when denied or when the cost was 0 (nothing is held).
	Lease Lease
}

// Remaining returns how many more slots the key has: Limit - InFlight, or
// 0 when InFlight is at or above the Limit.
func (d LeaseDecision) Remaining() int64 { return max(d.Limit-d.InFlight, 0) }

// Decide is the decision of every store for a request of cost on a key
// with inFlight slots held under c (the leases that expired dropped
// first): allowed if the cost fits beside them. A zero Max or a negative
// cost is denied for ever without reading the key, so InFlight is 0; a
// cost above Max is denied for ever; a cost that does not fit now is
// denied with LeaseRetryAfter. An allowed cost of 0 holds nothing. The
// stores keep no other rule: the Redis script is this function in Lua.
func (c Concurrency) Decide(inFlight, cost int64) LeaseDecision {
	d := LeaseDecision{Limit: c.Max, InFlight: inFlight}
	switch {
	case c.Max == 0 || cost < 0:
		d.InFlight, d.RetryAfter = 0, limiter.Never
	case cost > c.Max:
		d.RetryAfter = limiter.Never
	case inFlight <= c.Max-cost:
		d.Allowed = true
		d.InFlight += cost
	default:
		d.RetryAfter = LeaseRetryAfter
	}
	return d
}

// Reads reports whether Decide needs the key's count for a request of
// cost under c: not for a zero Max or a negative cost.
func (c Concurrency) Reads(cost int64) bool { return c.Max > 0 && cost >= 0 }
