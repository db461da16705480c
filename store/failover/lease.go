package failover

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/store"
)

// Concurrency leases (store.Leaser) go to the shared store while counting
// is shared, through the same circuit as decisions. While the circuit is
// open the failure policy decides: FailOpen returns the shared store's
// error, so that the caller admits the request without a lease; FailClosed
// returns *store.UnavailableError; FailLocal acquires from Fallback at
// Max/Instances (at least 1). A lease Fallback issued is marked in its ID,
// so that its Release and Renew go back to Fallback, whichever state the
// circuit is in then.

var _ store.Leaser = (*Store)(nil)

// localMark starts the ID of a lease Fallback issued. No shared lease ID
// starts with it (Redis's are hexadecimal).
const localMark = "local:"

var errNoLeases = errors.New("failover: the shared store keeps no leases (store.Leaser)")

// Acquire acquires a lease from the shared store, or by the failure
// policy while it cannot (see the comment above). A failure of the shared
// store counts towards the circuit; a caller that left before it answered
// does not.
func (s *Store) Acquire(ctx context.Context, key store.Key, limit store.Concurrency, now time.Time, cost int64) (store.LeaseDecision, error) {
	if err := limit.Check(); err != nil {
		return store.LeaseDecision{}, err
	}
	shared, ok := s.opts.Shared.(store.Leaser)
	if !ok {
		return store.LeaseDecision{}, errNoLeases
	}
	if !s.mayCallShared(s.opts.Clock.Now()) {
		return s.failLease(ctx, key, limit, now, cost, errCircuitOpen)
	}
	d, err := shared.Acquire(ctx, key, limit, now, cost)
	if err != nil && ctx.Err() != nil { // the caller left: see DecideEach
		return store.LeaseDecision{}, fmt.Errorf("failover: %w", ctx.Err())
	}
	if err != nil {
		s.failed()
		return s.failLease(ctx, key, limit, now, cost, err)
	}
	s.succeeded()
	return d, nil
}

// failLease answers a lease by the failure policy.
func (s *Store) failLease(ctx context.Context, key store.Key, limit store.Concurrency, now time.Time, cost int64, cause error) (store.LeaseDecision, error) {
	s.stats.Degraded.Add(1)
	if s.opts.OnFailure != store.FailLocal {
		return store.LeaseDecision{}, s.opts.OnFailure.Unavailable(cause, s.opts.RetryAfter)
	}
	fb, ok := s.opts.Fallback.(store.Leaser)
	if !ok { // nothing local can decide: refused, as FailLocal says
		return store.LeaseDecision{}, s.opts.OnFailure.Unavailable(errors.New("failover: the fallback store keeps no leases"), s.opts.RetryAfter)
	}
	if limit.Max > 0 {
		limit.Max = max(1, limit.Max/int64(s.opts.Instances))
	}
	d, err := fb.Acquire(ctx, key, limit, now, cost)
	if err != nil {
		return store.LeaseDecision{}, fmt.Errorf("failover: local fallback: %w", err)
	}
	if !d.Lease.IsZero() {
		d.Lease.ID = localMark + d.Lease.ID
	}
	return d, nil
}

// Release gives a lease back to the store that issued it. A shared lease
// is not sent while the circuit is open: it expires within its TTL.
func (s *Store) Release(ctx context.Context, lease store.Lease, now time.Time) error {
	if lease.IsZero() {
		return nil
	}
	if id, ok := strings.CutPrefix(lease.ID, localMark); ok {
		fb, _ := s.opts.Fallback.(store.Leaser)
		if fb == nil {
			return nil
		}
		lease.ID = id
		return fb.Release(ctx, lease, now)
	}
	shared, ok := s.opts.Shared.(store.Leaser)
	switch {
	case !ok:
		return nil
	case s.degraded.Load():
		return errCircuitOpen
	}
	return shared.Release(ctx, lease, now)
}

// Renew renews each lease in the store that issued it: the local ones in
// Fallback, the shared ones in the shared store unless the circuit is open
// (then they are reported not kept, with errCircuitOpen).
func (s *Store) Renew(ctx context.Context, leases []store.Lease, now time.Time) ([]bool, error) {
	kept := make([]bool, len(leases))
	var local, shared []store.Lease
	var localAt, sharedAt []int
	for i, l := range leases {
		if id, ok := strings.CutPrefix(l.ID, localMark); ok {
			l.ID = id
			local, localAt = append(local, l), append(localAt, i)
		} else if !l.IsZero() {
			shared, sharedAt = append(shared, l), append(sharedAt, i)
		}
	}
	var first error
	renew := func(st store.Store, ls []store.Lease, at []int) {
		leaser, ok := st.(store.Leaser)
		if len(ls) == 0 || !ok {
			return
		}
		res, err := leaser.Renew(ctx, ls, now)
		if err != nil && first == nil {
			first = err
		}
		for k, i := range at {
			kept[i] = k < len(res) && res[k]
		}
	}
	renew(s.opts.Fallback, local, localAt)
	if len(shared) > 0 && s.degraded.Load() {
		return kept, errCircuitOpen
	}
	renew(s.opts.Shared, shared, sharedAt)
	return kept, first
}
