package failover

import (
	"context"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

var _ store.Settler = (*Store)(nil)

// SettleMargin is how much later than the last change between the shared
// store and the fallback a reservation must have been made for the local
// fallback to settle or cancel it: a reservation the shared store made (in
// Redis's clock) just before the change must not be given back from the
// fallback's counts, where it never was.
const SettleMargin = time.Second

// Settle settles a reservation in the store that is counting now, if that
// store made it (see counter). Any other reservation stands as it was
// decided (a refund there could give back what another store counted),
// and the decision is the zero Decision: nothing was looked at.
func (s *Store) Settle(ctx context.Context, key store.Key, limit limiter.Limit, now time.Time, r limiter.Reservation, reserved, actual int64) (limiter.Decision, error) {
	st, limit := s.counter(r, limit)
	if st, ok := st.(store.Settler); ok {
		return st.Settle(ctx, key, limit, now, r, reserved, actual)
	}
	return limiter.Decision{}, nil
}

// counter returns the store that is counting now, with the limit it counts
// under, if that store made the reservation r: the shared store, for a
// reservation made since it last came back; while degraded with
// store.FailLocal, the local fallback (under this instance's share of
// limit), for one made at least SettleMargin after the shared store went
// away. Otherwise it returns nil.
func (s *Store) counter(r limiter.Reservation, limit limiter.Limit) (store.Store, limiter.Limit) {
	degraded := s.degraded.Load()
	since := s.switched.Load() // read after degraded: at least the time of the change to it (see change)
	switch {
	case !degraded && r.At > since:
		return s.opts.Shared, limit
	case degraded && s.opts.OnFailure == store.FailLocal && r.At > since+int64(SettleMargin/time.Microsecond):
		return s.opts.Fallback, s.share(limit)
	}
	return nil, limit
}
