package store

import (
	"context"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// Settler is implemented by stores that settle a request once its actual
// cost is known (a rule that counts only failures, a cost the upstream
// reports): the request reserved its cost when it was decided, and Settle
// refunds or charges the difference on its key, atomically, by
// limiter.Settle.
type Settler interface {
	// Settle settles a request of cost reserved, admitted on key under
	// limit with the Reservation r of its decision, at its actual cost at
	// now. It returns what a look at now sees of the key
	// afterwards. A key whose state was written under another limit since,
	// or that the store no longer holds (it expired, or it was decided on a
	// memory store's overflow counter), is left as it is: the refund is
	// void, and so is a charge. An error means the store could not settle;
	// the reservation then stands as it was decided.
	Settle(ctx context.Context, key Key, limit limiter.Limit, now time.Time, r limiter.Reservation, reserved, actual int64) (limiter.Decision, error)
}
