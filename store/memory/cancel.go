package memory

import (
	"context"
	"hash/maphash"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

var _ store.Canceler = (*Store)(nil)

// Cancel gives back the reservation r of a request of cost held for its
// turn on key under limit (limiter.Limit.Cancel): only while it is the
// key's last reservation, and the key's state is still under limit. A
// key the store no longer holds (evicted, or decided on its overflow
// counter) gives nothing back. The key keeps its expiry: a later one than
// its state needs only keeps it a little longer. It returns
// store.ErrClosed after Close.
func (s *Store) Cancel(_ context.Context, k store.Key, limit limiter.Limit, r limiter.Reservation, cost int64) (bool, error) {
	key := k.String()
	h := maphash.String(s.seed, key)
	sh := &s.shards[h&s.mask]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.closed {
		return false, store.ErrClosed
	}
	i := sh.tab.find(h, key)
	if i < 0 {
		return false, nil
	}
	e := sh.tab.at(i)
	if !limit.Same(sh.limits.at(e.limit)) {
		return false, nil
	}
	st := limiter.State{A: e.a, B: e.b}
	if !limit.Cancel(&st, r, cost) {
		return false, nil
	}
	e.a, e.b = st.A, st.B
	return true, nil
}
