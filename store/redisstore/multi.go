package redisstore

import (
	"context"
	"time"

	"github.com/redis/rueidis"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

var _ store.AllOrNothing = (*Store)(nil)

// multiEntryLen is the length of one request in the multi-rule script's
// ARGV[1]: seven doubles (see lua/multi.lua).
const multiEntryLen = 7 * 8

// DecideAll decides the requests of one HTTP request all or nothing in one
// script call (lua/multi.lua), as store.AllOrNothing says. On a Redis
// Cluster the keys must share a hash tag (one group: store.GroupKey), so
// that they live on one node. It returns store.ErrNotAtomic for keys of
// different groups on a Cluster, a zero limit, a negative cost or keys
// that repeat.
func (s *Store) DecideAll(ctx context.Context, reqs []store.Request, now time.Time) ([]store.Result, error) {
	if s.closed.Load() {
		return nil, store.ErrClosed
	}
	if !combinable(reqs) {
		return nil, store.ErrNotAtomic
	}
	if err := s.Connect(ctx); err != nil {
		return nil, err
	}
	t := int64(useRedisTime)
	if s.callerTime {
		t = limiter.UnixMicro(now)
	}
	keys := make([]string, len(reqs))
	for i, r := range reqs {
		keys[i] = redisKey(s.prefix, r.Key)
		if s.client.Mode() == rueidis.ClientModeCluster && hashTag(keys[i]) != hashTag(keys[0]) {
			return nil, store.ErrNotAtomic // they may live on different nodes
		}
	}
	args := make([]byte, 8+multiEntryLen*len(reqs))
	putDouble(args, t)
	for i, r := range reqs {
		c := newCall(r.Limit, keys[i], r.Cost, t) // the request as the one-key script reads it
		e := args[8+multiEntryLen*i:]
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
	ds, err := parseBatchReply(s.evalScript(tctx, multiScript, keys, string(args)), 0, len(reqs))
	if err != nil {
		return nil, s.failed(ctx, multiScript, err)
	}
	out := make([]store.Result, len(reqs))
	for i, d := range ds {
		d.Limit = reqs[i].Limit.Burst()
		out[i].Decision = d
	}
	return out, nil
}

// combinable reports whether the multi-rule script can decide reqs: valid
// limits and costs, distinct keys.
func combinable(reqs []store.Request) bool {
	for i, r := range reqs {
		if r.Limit.IsZero() || r.Cost < 0 {
			return false
		}
		for _, o := range reqs[:i] {
			if o.Key == r.Key {
				return false
			}
		}
	}
	return true
}
