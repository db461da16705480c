package redis

import (
	"context"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

var _ store.Holder = (*Store)(nil)

// grantBatch is DecideEach with quota grants: each request is answered
// from its key's grant, or takes one, or (a cold key, a limit never
// granted) goes with the others to Redis in one batch as without grants.
// A request answered from a grant is answered even when Redis fails: the
// others then carry the error in their results.
func (s *Store) grantBatch(ctx context.Context, reqs []store.Request, now time.Time) ([]store.Result, error) {
	results := make([]store.Result, len(reqs))
	var pending []int
	for i, r := range reqs {
		d, ok, err := s.grantDecide(ctx, r, now)
		if !ok {
			pending = append(pending, i)
			continue
		}
		results[i] = store.Result{Decision: d, Err: err}
	}
	if len(pending) == 0 {
		return results, nil
	}
	batch := reqs
	if len(pending) < len(reqs) {
		batch = make([]store.Request, len(pending))
		for k, i := range pending {
			batch[k] = reqs[i]
		}
	}
	res, err := s.batchDirect(ctx, batch, now)
	if err != nil && len(pending) == len(reqs) {
		return nil, err
	}
	for k, i := range pending {
		if err != nil {
			results[i].Err = err
			continue
		}
		results[i] = res[k]
	}
	return results, nil
}

// grantDecide decides r from a grant, taking one if its key is hot, and
// reports whether it did (false: decide r without grants).
func (s *Store) grantDecide(ctx context.Context, r store.Request, now time.Time) (limiter.Decision, bool, error) {
	for range 3 { // the call r queued for could not serve it: it tries again
		d, st := s.grants.take(r, now, mayAhead)
		switch st {
		case served:
			return d, true, nil
		case ahead:
			s.flyGrants(r.Key, r.Limit, now, nil)
			return d, true, nil
		case fill:
			d, err := s.fillGrant(ctx, r, now)
			return d, true, err
		case wait:
			d, st, err := s.queueGrant(ctx, r, now)
			if st != retry {
				return d, st == served, err
			}
		default:
			return limiter.Decision{}, false, nil
		}
	}
	return limiter.Decision{}, false, nil
}

// queueGrant queues r for the next grant call on its key and waits for
// it. The wait is bounded by the calls, each by Options.Timeout: the call
// in flight, then the one r goes in (no timer of its own per request: a
// hot key queues many).
func (s *Store) queueGrant(ctx context.Context, r store.Request, now time.Time) (limiter.Decision, step, error) {
	w, again := s.grants.join(ctx, r, now)
	switch {
	case w == nil && again:
		return limiter.Decision{}, retry, nil
	case w == nil:
		return limiter.Decision{}, direct, nil
	}
	select {
	case o := <-w.done:
		if o.err == errGone {
			o.err = s.failed(ctx, grantScripts[r.Limit.Algorithm()], ctx.Err())
		}
		return o.d, o.step, o.err
	case <-ctx.Done():
		return limiter.Decision{}, served, s.failed(ctx, grantScripts[r.Limit.Algorithm()], ctx.Err())
	}
}

// grantAll is DecideAll with quota grants: every request answered from
// its key's grant, or, when every key is hot and grantable and no request
// is a shadow's, one call of the multi-rule script that spends a grant on
// every key, all or nothing; otherwise (or when that is denied) the
// requests are decided as without grants.
func (s *Store) grantAll(ctx context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	g := s.grants
	if out, ok := g.takeAll(reqs, now); ok {
		return append(dst, out...), nil
	}
	if repeats(reqs) {
		return s.decideAll(ctx, dst, reqs, now)
	}
	olds, ok := g.fillAll(reqs, now)
	if !ok {
		return s.decideAll(ctx, dst, reqs, now)
	}
	asks := make([]store.Request, len(reqs))
	for i, r := range reqs {
		asks[i], asks[i].Cost = r, g.want(r.Limit)-olds[i]
	}
	res, err := s.decideAll(ctx, nil, asks, now)
	pass := err == nil
	for _, x := range res {
		pass = pass && x.Err == nil && x.Decision.Allowed
	}
	out := make([]store.Result, len(reqs))
	for i, r := range reqs {
		var granted int64
		if pass {
			granted = asks[i].Cost
		}
		out[i].Decision = g.land(r.Key, r.Limit, now, olds[i], r.Cost, resultDecision(res, i), granted)
	}
	if pass {
		return append(dst, out...), nil
	}
	return s.decideAll(ctx, dst, reqs, now)
}

func resultDecision(res []store.Result, i int) limiter.Decision {
	if i < len(res) {
		return res[i].Decision
	}
	return limiter.Decision{}
}

// fillAll marks every key of reqs as filling, with the units its grant
// still holds taken out, if every one is hot and grantable and none has a
// grant call in flight; else it marks none.
func (g *grantTable) fillAll(reqs []store.Request, now time.Time) ([]int64, bool) {
	olds := make([]int64, len(reqs))
	for i, r := range reqs {
		_, st := g.take(r, now, mayFill)
		if st == served { // enough of this one, not of another
			g.untake(r)
		}
		if st != fill {
			for k, t := range reqs[:i] {
				g.land(t.Key, t.Limit, now, olds[k], t.Cost, limiter.Decision{}, 0)
			}
			return nil, false
		}
		sh := g.shard(r.Key)
		sh.mu.Lock()
		e := sh.keys[r.Key]
		olds[i] = e.held(r.Limit, now)
		e.units -= olds[i]
		sh.mu.Unlock()
	}
	return olds, true
}

// DecideHeld answers every request of reqs from the quota grants this
// instance holds, without asking Redis, or none of them (false): the
// failover store asks it while Redis is unreachable, so that units
// already spent in Redis are admitted before on_failure decides.
func (s *Store) DecideHeld(reqs []store.Request, now time.Time) ([]store.Result, bool) {
	if s.grants == nil || s.closed.Load() {
		return nil, false
	}
	return s.grants.takeAll(reqs, now)
}

// sweepGrants ends the grants of g, run by the store's sweeper every
// half TTL: ended grants give their unused units back, in one call each.
// With all (at Close) every grant ends.
func (s *Store) sweepGrants(now time.Time, all bool) {
	g := s.grants
	for _, b := range g.sweep(now, all) {
		ok := false
		if s.ready.Load() {
			ok, _ = s.returnGrant(context.Background(), b.key, b.limit, now, b.res, b.granted, b.unused)
		}
		if ok {
			g.stats.UnitsReturned.Add(b.unused)
		} else {
			g.stats.UnitsExpired.Add(b.unused)
		}
	}
}

// sweepLoop runs sweepGrants every half TTL until ctx ends.
func (s *Store) sweepLoop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	t := s.clock.NewTicker(max(s.grants.opts.TTL/2, MinGrantTTL/2))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
			s.sweepGrants(s.clock.Now(), false)
		}
	}
}
