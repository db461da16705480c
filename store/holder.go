package store

import "time"

// Holder is implemented by a shared store that holds part of its quota at
// this instance, already spent in the shared store: the Redis store's
// quota grants (store.redis.lease). While the shared store cannot be
// reached, the failover store asks it before its failure policy decides,
// so that what was spent is admitted.
type Holder interface {
	// DecideHeld answers every request of reqs from what the store holds,
	// without calling out, and reports true; or answers none, spends
	// nothing and reports false.
	DecideHeld(reqs []Request, now time.Time) ([]Result, bool)
}
