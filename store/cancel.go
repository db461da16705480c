package store

import (
	"context"

	"github.com/sluice-rl/sluice/limiter"
)

// Canceler is implemented by stores that can give back what a request held
// for its turn reserved (a Decision with a Delay under a limit with a
// delay), when its caller leaves before the hold ends.
type Canceler interface {
	// Cancel gives back the reservation r of a request of cost decided on
	// key under limit, as limiter.Limit.Cancel does: only if it is still
	// the key's last reservation. It reports whether it did; false (and no
	// error) means the reservation stands, the request's turn going
	// unused. An error means the store could not be asked. A reservation
	// is cancelled at most once, and not settled after (see
	// limiter.Limit.Cancel).
	Cancel(ctx context.Context, key Key, limit limiter.Limit, r limiter.Reservation, cost int64) (bool, error)
}
