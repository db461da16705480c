package redis

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// multiEntryLen is the length of one request in the multi-rule script's
// ARGV[1]: seven doubles (see lua/multi.lua).
const multiEntryLen = 7 * 8

// DecideAll decides the requests of one HTTP request all or nothing, as
// store.Store says, in one call of the multi-rule script
// (lua/multi.lua), and appends the results to dst. A zero Limit and a
// negative cost are denied here, as limiter.Decide denies them, without
// asking Redis for them: when such a request enforces, the others are only
// looked at, in one batch.
//
// Look then spend. The script reaches the keys of one node and decides
// each key once. On a Redis Cluster the keys of one request must
// therefore share a hash tag (one group: store.GroupKey, as the gateway
// makes a caller's keys), and a key may not be asked twice. Requests that
// are not so are decided by store.LookThenSpend, in two or three round
// trips and not atomically: this is the one place where sluice decides
// the rules of a request that way.
func (s *Store) DecideAll(ctx context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	if s.closed.Load() {
		return dst, store.ErrClosed
	}
	if s.grants != nil {
		return s.grantAll(ctx, dst, reqs, now)
	}
	return s.decideAll(ctx, dst, reqs, now)
}

// decideAll is DecideAll without quota grants.
func (s *Store) decideAll(ctx context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	if err := s.Connect(ctx); err != nil {
		return dst, err
	}
	keys := make([]string, len(reqs))
	for i, r := range reqs {
		keys[i] = redisKey(s.prefix, r.Key)
	}
	if repeats(reqs) || s.client.Mode() == rueidis.ClientModeCluster && !oneGroup(reqs) {
		return store.LookThenSpend(ctx, s, dst, reqs, now)
	}
	start := len(dst)
	dst = append(dst, make([]store.Result, len(reqs))...)
	out := dst[start:]
	valid, blocked := make([]int, 0, len(reqs)), false
	for i, r := range reqs {
		if r.Limit.IsZero() || r.Cost < 0 {
			out[i].Decision, _ = limiter.Decide(r.Limit, limiter.State{}, now, r.Cost)
			blocked = blocked || !r.Shadow
			continue
		}
		valid = append(valid, i)
	}
	var err error
	if blocked {
		err = s.lookAt(ctx, reqs, valid, now, out)
	} else {
		err = s.multi(ctx, reqs, keys, valid, now, out)
	}
	if err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// lookAt answers the requests of reqs that valid names with a look (cost
// 0) at their keys, in one batch, into out.
func (s *Store) lookAt(ctx context.Context, reqs []store.Request, valid []int, now time.Time, out []store.Result) error {
	looks := make([]store.Request, len(valid))
	for j, i := range valid {
		looks[j], looks[j].Cost = reqs[i], 0
	}
	res, err := s.DecideEach(ctx, nil, looks, now)
	if err != nil {
		return err
	}
	for j, i := range valid {
		out[i] = res[j]
	}
	return nil
}

// multi decides the requests of reqs that valid names (their Redis keys
// in keys) in one call of the multi-rule script, into out.
func (s *Store) multi(ctx context.Context, reqs []store.Request, keys []string, valid []int, now time.Time, out []store.Result) error {
	if len(valid) == 0 {
		return nil
	}
	t := int64(useRedisTime)
	if s.callerTime {
		t = limiter.UnixMicro(now)
	}
	args := make([]byte, 8+multiEntryLen*len(valid))
	putDouble(args, t)
	scriptKeys := make([]string, len(valid))
	for j, i := range valid {
		r := &reqs[i]
		scriptKeys[j] = keys[i]
		c := newCall(r.Limit, keys[i], r.Cost, t) // the request as the one-key script reads it
		e := args[8+multiEntryLen*j:]
		putDouble(e, int64(r.Limit.Algorithm()))
		putDouble(e[8:], c.cost)
		enforce := int64(1)
		if r.Shadow {
			enforce = 0
		}
		putDouble(e[16:], enforce)
		copy(e[24:], c.req[16:]) // the limit's three numbers and queue
	}
	tctx, cancel := s.withTimeout(ctx)
	defer cancel()
	ds, err := parseBatchReply(s.evalScript(tctx, multiScript, scriptKeys, string(args)), 0, len(valid))
	if err != nil {
		return s.failed(ctx, multiScript, err)
	}
	for j, i := range valid {
		ds[j].Limit = reqs[i].Limit.Burst()
		out[i].Decision = ds[j]
	}
	return nil
}

// repeats reports whether a key is asked twice in reqs.
func repeats(reqs []store.Request) bool {
	for i, r := range reqs {
		for _, o := range reqs[:i] {
			if o.Key == r.Key {
				return true
			}
		}
	}
	return false
}

// oneGroup reports whether the keys of reqs share one hash tag, and so one
// Cluster node: there is one, or they are of one group (redisKey makes a
// key's group its hash tag; an ungrouped key's tag is the whole key).
func oneGroup(reqs []store.Request) bool {
	if len(reqs) < 2 {
		return true
	}
	for _, r := range reqs {
		if g := r.Key.Group(); g == "" || g != reqs[0].Key.Group() {
			return false
		}
	}
	return true
}
