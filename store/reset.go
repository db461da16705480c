package store

import (
	"context"
	"fmt"
)

// Resetter is implemented by stores that can forget one key's state on
// request, as an operator resets one caller's counter: the key starts
// afresh, as a key never seen. The leases a concurrency rule holds on the
// key are forgotten too: requests in flight still end, and their releases
// then give back nothing.
type Resetter interface {
	// Reset forgets key's state (a rate key's counter, a concurrency
	// key's leases). A key the store does not hold is no error. An error
	// means the store could not be asked; the key may or may not have
	// been reset.
	Reset(ctx context.Context, key Key) error
}

// ResetFeed is implemented by shared stores that tell each instance of
// the resets made by any instance on the same shared counters, so that an
// instance that keeps something of a key locally (store/failover's cached
// rejections) forgets it too.
type ResetFeed interface {
	// WatchResets calls forget with the key of every reset made on the
	// shared counters (by this instance or another), from now until the
	// store is closed, on a goroutine the store owns; forget must be quick.
	// forget(Key{}) means resets may have been missed (the feed was lost and
	// is back): forget every key. A second call replaces forget.
	WatchResets(forget func(key Key))
	// Hearing reports whether resets reach this instance now: the feed is
	// watched and its subscription made (after the forget(Key{}) that
	// begins it). Until then, and from when it is lost, a reset made
	// elsewhere would pass this instance by, so nothing of a key may be
	// kept here.
	Hearing() bool
}

// UnconfirmedResetError is the error of a shared store's Reset that reset
// the key's shared counter and told every instance watching its resets
// (ResetFeed), but heard back from only Confirmed of the Told instances in
// time. The others forget what they keep of the key as soon as they are
// told; until then they may still answer a cached rejection (at most
// until its Retry-After).
type UnconfirmedResetError struct {
	Confirmed, Told int
}

func (e *UnconfirmedResetError) Error() string {
	return fmt.Sprintf("store: counter reset, but only %d of the %d instances told confirmed forgetting their cached rejections in time", e.Confirmed, e.Told)
}
