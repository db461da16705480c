package memory

import (
	"context"
	"hash/maphash"
	"slices"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

var _ store.Settler = (*Store)(nil)

// Settle settles a reservation on key at its actual cost at now
// (limiter.Settle), atomically for that key, and keeps the key as long as
// its settled state can still change a decision. A key the store does not
// hold (it expired, was evicted, or was decided on its overflow counter),
// or holds under another limit, is left as it is; the decision is then a
// look at it. A sliding_log's entries stand under any limit (as in Redis,
// whose logs record none): its reservation is settled under the new one. It returns store.ErrClosed after Close.
func (s *Store) Settle(_ context.Context, k store.Key, limit limiter.Limit, now time.Time, r limiter.Reservation, reserved, actual int64) (limiter.Decision, error) {
	key := k.String()
	h := maphash.String(s.seed, key)
	sh := &s.shards[h&s.mask]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.closed {
		return limiter.Decision{}, store.ErrClosed
	}
	var st limiter.State
	i := sh.tab.find(h, key)
	if i < 0 {
		_, d := limiter.Settle(limit, st, now, r, 0, 0)
		return d, nil
	}
	e := sh.tab.at(i)
	if held := sh.limits.at(e.limit); !limit.Same(held) {
		if limit.Algorithm() != limiter.SlidingLog || held.Algorithm() != limiter.SlidingLog {
			st = limiter.State{A: e.a, B: e.b, Log: slices.Clone(sh.logs[e.key()])}
			_, d := limiter.Settle(limit, limiter.Reinterpret(*held, limit, st, now), now, r, 0, 0)
			return d, nil
		}
		sh.reinterpret(e, limit, now) // a log's entries stand under any limit, as in Redis
	}
	old := sh.logs[e.key()]
	st = limiter.State{A: e.a, B: e.b, Log: old}
	st, d := limiter.Settle(limit, st, now, r, reserved, actual)
	sh.record(e, d.Remaining > 0, expirySecond(now, d.Reset), st.A, st.B)
	if limit.Algorithm() == limiter.SlidingLog {
		sh.setLog(e, st.Log, len(old))
	}
	return d, nil
}
