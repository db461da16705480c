package redis

import (
	"context"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

var _ store.Canceler = (*Store)(nil)

// Cancel gives back the reservation r of a request of cost held for its
// turn on key under limit, in one script call (lua/cancel.lua), as
// limiter.Limit.Cancel does: only while it is the key's last reservation
// and the key's state is under limit. The key keeps its TTL.
func (s *Store) Cancel(ctx context.Context, key store.Key, limit limiter.Limit, r limiter.Reservation, cost int64) (bool, error) {
	if s.closed.Load() {
		return false, store.ErrClosed
	}
	if !limit.Algorithm().HasBurst() || cost < 1 || cost > limit.Burst() || r.At < 1 {
		return false, nil
	}
	if err := s.Connect(ctx); err != nil {
		return false, err
	}
	p, n := limit.Interval()
	var b [7 * 8]byte
	for i, v := range [...]int64{int64(limit.Algorithm()), limit.Burst(), p, n, cost, r.At, r.Level} {
		putDouble(b[8*i:], v)
	}
	tctx, cancel := s.withTimeout(ctx)
	defer cancel()
	got, err := s.evalScript(tctx, cancelScript, []string{redisKey(s.prefix, key)}, string(b[:])).AsInt64()
	if err != nil {
		return false, s.failed(ctx, cancelScript, err)
	}
	return got == 1, nil
}
