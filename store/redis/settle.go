package redis

import (
	"context"
	"fmt"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

var _ store.Settler = (*Store)(nil)

// settleScripts settle a reservation, one script per algorithm (see
// lua/settle_head.lua), indexed by algorithm; index 0 is unused.
var settleScripts = loadSettleScripts()

func loadSettleScripts() (out [limiter.LeakyBucket + 1]*script) {
	lib, head, end := mustRead("lua/lib.lua"), mustRead("lua/settle_head.lua"), mustRead("lua/settle_end.lua")
	for _, alg := range limiter.Algorithms {
		named := fmt.Sprintf("local alg = %d -- %s\n", alg, alg)
		body := mustRead("lua/state.lua") + mustRead("lua/settle.lua")
		if alg == limiter.SlidingLog {
			body = "local tag\nlocal changed, n1, n2, n3 = false, 0, 0, 0\n" + mustRead("lua/settle_log.lua")
		}
		out[alg] = newScript(alg.String()+" settle", lib+named+head+body+mustRead("lua/"+alg.String()+".lua")+end)
	}
	return out
}

// Settle settles a reservation of reserved on key under limit at its
// actual cost (limiter.Settle) in one script call, at Redis TIME (or now,
// with Options.CallerTime), and returns what a look at the key then sees.
// A key that is gone, or that holds a state of another limit, is left as
// it is; a sliding_log's list, which records no limit, is settled under
// any. A refund keeps the key's TTL; a bucket's charge gives it the
// settled state's Reset.
func (s *Store) Settle(ctx context.Context, key store.Key, limit limiter.Limit, now time.Time, r limiter.Reservation, reserved, actual int64) (limiter.Decision, error) {
	if s.closed.Load() {
		return limiter.Decision{}, store.ErrClosed
	}
	if limit.IsZero() {
		return limiter.Decision{Limit: limit.Burst(), RetryAfter: limiter.Never}, nil
	}
	if err := s.Connect(ctx); err != nil {
		return limiter.Decision{}, err
	}
	c := s.newCall(key, limit, 0, now) // the look's request: now, the limit and its queue
	var b [9 * 8]byte
	copy(b[:40], c.req[8:48])
	// Values the scripts keep exact: a reservation is below 2^53; a
	// reserved cost beyond the burst was never allowed (limiter.Settle
	// settles nothing then), and an actual cost beyond twice the burst
	// charges the burst, as any beyond reserved+burst does.
	if reserved < 0 || reserved > limit.Burst() {
		reserved = 0
	}
	for i, v := range [...]int64{r.At, r.Level, reserved, min(max(actual, -1), 2*limit.Burst()+1)} {
		putDouble(b[40+8*i:], v)
	}
	sc := settleScripts[limit.Algorithm()]
	tctx, cancel := s.withTimeout(ctx)
	defer cancel()
	d, err := parseReply(s.evalScript(tctx, sc, []string{c.key}, string(b[:])), c.burst)
	if err != nil {
		return limiter.Decision{}, s.failed(ctx, sc, err)
	}
	return d, nil
}
