package redis

import (
	"context"
	"errors"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// Grant calls on a hot key.
//
// One grant call at a time is in flight on a key. The units the key
// holds keep serving while it is. A request they cannot serve meanwhile
// does not wait for that call's units (at Max 10 and 64 requests in
// flight most would wait again, one call for every Max of them): it
// queues, and the next call spends, besides the next grant, the cost of
// every request queued, which it then admits, as coalesce.go's batches do
// without grants; in Redis that is one decision of their total cost,
// however many they are. A key on which requests have queued is busy: from then
// on its next grant is taken when its units fall to half a grant (ahead),
// while they still serve. Either way a key never holds more than Max
// units, and every unit is spent in Redis before it is admitted.

// grantWaiter is a request queued for the next grant call on its key.
type grantWaiter struct {
	ctx  context.Context // the caller's
	now  time.Time       // the request's
	cost int64
	done chan grantOutcome // buffered: delivering never blocks
}

// errGone is the outcome of a waiter whose caller had gone when its call
// landed (its units stay with the key).
var errGone = errors.New("redis store: caller gone")

// grantOutcome is a waiter's answer: served (d, or err), direct (decide
// it without grants) or retry (take again).
type grantOutcome struct {
	step step
	d    limiter.Decision
	err  error
}

// join queues r for the next grant call on its key, if one is still in
// flight under r's limit; else it returns nil and whether to take again
// (false: decide r without grants).
func (g *grantTable) join(ctx context.Context, r store.Request, now time.Time) (*grantWaiter, bool) {
	sh := g.shard(r.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.keys[r.Key]
	switch {
	case e == nil || !e.flying:
		return nil, true
	case e.flyLimit != r.Limit:
		return nil, false
	}
	w := &grantWaiter{ctx: ctx, now: now, cost: r.Cost, done: make(chan grantOutcome, 1)}
	e.queue = append(e.queue, w)
	e.busy = true
	return w, false
}

// release ends the call in flight on e: the requests queued are served
// from its units as far as they go, the others take again.
func (g *grantTable) release(e *grantEntry, now time.Time) {
	for _, w := range g.serveQueued(e, e.queue, now, true) {
		w.done <- grantOutcome{step: retry}
	}
	e.queue, e.flying = nil, false
}

// serveQueued answers the waiters of ws that e's units at now can serve,
// in order, each that fits, and returns the others; waiters whose callers
// have gone are answered errGone. With saved, each served is counted as
// a call saved.
func (g *grantTable) serveQueued(e *grantEntry, ws []*grantWaiter, now time.Time, saved bool) []*grantWaiter {
	var rest []*grantWaiter
	for _, w := range ws {
		switch {
		case w.ctx.Err() != nil:
			w.done <- grantOutcome{step: served, err: errGone}
		case e.held(e.flyLimit, now) >= w.cost:
			g.spend(e, w.cost, saved)
			w.done <- grantOutcome{step: served, d: e.served(now)}
		default:
			rest = append(rest, w)
		}
	}
	return rest
}

// ask returns what the next grant call on e under l asks for batch: the
// units to spend (want: a grant, less what e holds, with the first
// waiter's cost in it as a lone request's is, and the others' besides; at
// most the burst) and the least that serves (need: the cheapest waiter's
// cost; 1 with no waiter).
func (g *grantTable) ask(key store.Key, l limiter.Limit, now time.Time, batch []*grantWaiter) (want, need int64) {
	sh := g.shard(key)
	sh.mu.Lock()
	held := sh.keys[key].held(l, now)
	sh.mu.Unlock()
	want, need = g.want(l)-held, 1
	if len(batch) > 0 {
		want -= batch[0].cost
		need = g.want(l)
	}
	for _, w := range batch {
		want += w.cost
		need = min(need, w.cost)
	}
	return min(max(want, need), l.Burst()), need
}

// landBatch ends the grant call on key asked at now under l for batch,
// answered d with granted units (0: denied), or err. It answers batch's
// waiters and those queued since as far as the units go (a denial
// answers those of batch that cost need, the cheapest; the others are
// decided without grants), and returns the waiters of the next call, and
// whether there is one (with no waiter: a busy key's refill ahead), to be
// asked at the now of its first waiter (the oldest), or with none of the
// key's last decision.
func (g *grantTable) landBatch(key store.Key, l limiter.Limit, now time.Time, batch []*grantWaiter, need int64,
	d limiter.Decision, granted int64, err error) ([]*grantWaiter, time.Time, bool) {
	sh := g.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.keys[key]
	if err != nil {
		for _, w := range batch {
			w.done <- grantOutcome{step: served, err: err}
		}
		g.release(e, now)
		return nil, now, false
	}
	if granted > 0 {
		g.merge(e, l, now, e.held(l, now), d, granted)
	}
	rest := g.serveQueued(e, batch, now, false)
	answered := len(batch) - len(rest)
	if granted == 0 {
		e.busy = false // the key is spent: no refill ahead until requests queue again
		for _, w := range rest {
			if w.cost == need {
				answered++
				w.done <- grantOutcome{step: served, d: d}
			} else {
				w.done <- grantOutcome{step: direct}
			}
		}
		rest = nil
	}
	if answered > 1 {
		g.stats.CallsSaved.Add(int64(answered - 1)) // one call answered them all
	}
	if want := g.want(l); e.units > want { // callers gone left their units: more than a grant is never held
		g.stats.UnitsExpired.Add(e.units - want)
		e.units, e.back = want, min(e.back, want)
	}
	next := append(rest, g.serveQueued(e, e.queue, now, true)...)
	e.queue = nil
	switch {
	case len(next) > 0:
		return next, next[0].now, true
	case granted > 0 && e.busy && e.units <= g.low(l):
		return nil, e.last, true
	}
	e.flying = false
	return nil, now, false
}

// fillGrant takes a grant for r's key, which take marked as flying: the
// call spends r's cost and a grant's units at once. The requests that
// queued meanwhile go in the next call, made on a goroutine of its own.
func (s *Store) fillGrant(ctx context.Context, r store.Request, now time.Time) (limiter.Decision, error) {
	w := &grantWaiter{ctx: ctx, now: now, cost: r.Cost, done: make(chan grantOutcome, 1)}
	next, at, more := s.grantCall(ctx, r.Key, r.Limit, now, []*grantWaiter{w})
	if more {
		s.flyGrants(r.Key, r.Limit, at, next)
	}
	o := <-w.done // a batch of one is always answered
	switch {
	case o.err == errGone:
		return limiter.Decision{}, s.failed(ctx, grantScripts[r.Limit.Algorithm()], ctx.Err())
	case o.step == direct:
		return s.decideDirect(ctx, r, now)
	}
	return o.d, o.err
}

// grantCall makes one grant call on key under l for batch and lands it.
func (s *Store) grantCall(ctx context.Context, key store.Key, l limiter.Limit, now time.Time, batch []*grantWaiter) ([]*grantWaiter, time.Time, bool) {
	want, need := s.grants.ask(key, l, now, batch)
	err := s.Connect(ctx)
	var d limiter.Decision
	var granted int64
	if err == nil {
		d, granted, err = s.takeGrant(ctx, key, l, now, want, need)
	}
	return s.grants.landBatch(key, l, now, batch, need, d, granted, err)
}

// flyGrants makes the next grant calls on key, for batch and whatever queues
// after it, on a goroutine of its own, until the key needs none; after
// Close they fail with store.ErrClosed.
func (s *Store) flyGrants(key store.Key, l limiter.Limit, now time.Time, batch []*grantWaiter) {
	g := s.grants
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closing {
		s.abortFlight(key, now, batch)
		return
	}
	g.flights.Add(1)
	go func() {
		defer g.flights.Done()
		for more := true; more; {
			if s.closed.Load() {
				s.abortFlight(key, now, batch)
				return
			}
			batch, now, more = s.grantCall(context.Background(), key, l, now, batch)
		}
	}()
}

// abortFlight ends the call in flight on key, answering batch and the
// requests queued with store.ErrClosed.
func (s *Store) abortFlight(key store.Key, now time.Time, batch []*grantWaiter) {
	sh := s.grants.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.keys[key]
	for _, w := range append(batch, e.queue...) {
		w.done <- grantOutcome{step: served, err: store.ErrClosed}
	}
	e.queue, e.flying = nil, false
}

// decideDirect decides r as without grants.
func (s *Store) decideDirect(ctx context.Context, r store.Request, now time.Time) (limiter.Decision, error) {
	res, err := s.batchDirect(ctx, []store.Request{r}, now)
	if err != nil {
		return limiter.Decision{}, err
	}
	return res[0].Decision, res[0].Err
}
