package failover

import (
	"context"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

var _ store.Canceler = (*Store)(nil)

// Cancel gives back a held request's reservation in the store that is
// counting now, if that store made it, as Settle does: the shared store,
// or while degraded with store.FailLocal the local fallback, under this
// instance's share of limit. A reservation the other store made is not
// given back (where a key happened to show the same drain point, the
// cancel would give back a request that store counted), nor anything
// while the circuit is open otherwise. A cached denial is left as it is:
// a cancel can only bring its end nearer, so it stays a denial the shared
// store would also have given, a little longer than needed.
func (s *Store) Cancel(ctx context.Context, key store.Key, limit limiter.Limit, r limiter.Reservation, cost int64) (bool, error) {
	st, limit := s.counter(r, limit)
	if c, ok := st.(store.Canceler); ok {
		return c.Cancel(ctx, key, limit, r, cost)
	}
	return false, nil
}
