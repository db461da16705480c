package failover

import (
	"context"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

var _ store.Canceler = (*Store)(nil)

// Cancel gives back a held request's reservation in the store that is
// counting now: the shared store, or while degraded with store.FailLocal
// the local fallback, under this instance's share of limit (a reservation
// the other store made is not found there, and nothing is given back).
// While the circuit is open otherwise, nothing is asked and nothing given
// back. A cached denial is left as it is: a cancel can only bring its end
// nearer, so it stays a denial the shared store would also have given, a
// little longer than needed.
func (s *Store) Cancel(ctx context.Context, key string, limit limiter.Limit, r limiter.Reservation, cost int64) (bool, error) {
	if !s.degraded.Load() {
		if c, ok := s.opts.Shared.(store.Canceler); ok {
			return c.Cancel(ctx, key, limit, r, cost)
		}
		return false, nil
	}
	if c, ok := s.opts.Fallback.(store.Canceler); ok && s.opts.OnFailure == store.FailLocal {
		return c.Cancel(ctx, key, s.share(limit), r, cost)
	}
	return false, nil
}
