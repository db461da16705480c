package gossip

import (
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// overflowPrefix starts the key of a rule's overflow counter: a key of its
// own (a store.Key's encoding starts with a digit or '@'), the
// same on every instance, so that the overflow counters are gossiped too.
const overflowPrefix = "\x00overflow:"

// decide decides on key (on its rule's overflow counter when the key finds
// no room, or is longer than a message may carry: shared reports it):
// compute on the fleet's counts, then commit to this instance's only if
// allowed and within MaxUnsynced.
//
// A store closed meanwhile decides nothing: the closed flag is read again
// under the shard's lock. Close sets it before its flush builds messages
// under the same locks, so every admission comes before a message the
// flush sends, or is refused.
func (s *Store) decide(key, rule string, l limiter.Limit, now time.Time, cost int64, overflow bool) (d limiter.Decision, shared bool, err error) {
	if len(key) > maxKeyLen && !overflow { // the others would refuse every message carrying it
		return s.decide(overflowKey(rule, l), rule, l, now, cost, true)
	}
	t := limiter.UnixMicro(now)
	sh := s.tab.shard(key)
	sh.mu.Lock()
	if s.closed.Load() {
		sh.mu.Unlock()
		return limiter.Decision{}, false, store.ErrClosed
	}
	e := sh.keys[key]
	if e == nil {
		if cost == 0 { // a look at a key nobody counted: a fresh state, not stored
			sh.mu.Unlock()
			d, _ := limiter.Decide(l, limiter.State{}, now, cost)
			return d, overflow, nil
		}
		if !overflow && !sh.room(s.tab.max, t) {
			sh.mu.Unlock()
			return s.decide(overflowKey(rule, l), rule, l, now, cost, true)
		}
		e = &entry{limit: l}
		sh.keys[key] = e
	}
	d = s.decideEntry(e, l, now, t, cost)
	sh.mu.Unlock()
	return d, overflow, nil
}

// overflowKey is the key of the overflow counter of rule under l.
func overflowKey(rule string, l limiter.Limit) string {
	return overflowPrefix + store.NewKey(rule, l.String()).String()
}

// decideEntry decides on e with its shard locked.
func (s *Store) decideEntry(e *entry, l limiter.Limit, now time.Time, t, cost int64) limiter.Decision {
	if !e.limit.Same(&l) {
		e.local = limiter.Reinterpret(e.limit, l, e.local, now)
		e.sent = limiter.Reinterpret(e.limit, l, e.sent, now)
		e.told = limiter.Reinterpret(e.limit, l, e.told, now)
		e.limit = l
	}
	v := s.view.Load()
	d, local, spends := s.weigh(e.peers, e.local, e.toldState(v), &l, now, t, cost, v)
	if spends {
		e.spend(&l, local, s.round.Load())
	}
	return d
}

// weigh decides a request of cost at t (now in µs) under l on a key of
// which this instance counted local, told the others told (both under l)
// and heard peers, by v: the fleet's counts decide, and an allowed request
// of a cost is kept within MaxUnsynced of told. It returns the decision,
// and the state local becomes with spends true if the request spends.
// Called with the key's shard locked; it changes nothing of the key.
func (s *Store) weigh(peers []party, local, told limiter.State, l *limiter.Limit, now time.Time, t, cost int64, v *view) (d limiter.Decision, after limiter.State, spends bool) {
	start := windowStart(t, int64(l.Period()/time.Microsecond))
	if local.A > start { // the clock went back: keep counting in the newer window, as limiter does
		start = local.A
	}
	own := align(l, local, start)
	fleet := own
	for i := range peers {
		p := &peers[i]
		st := p.st
		if !p.limit.Same(l) {
			st = limiter.Reinterpret(p.limit, *l, st, now)
		}
		w := align(l, st, start)
		fleet.prev, fleet.cur = fleet.prev+w.prev, fleet.cur+w.cur
	}
	d, _ = limiter.Decide(*l, state(l, start, fleet), now, cost)
	if !d.Allowed || cost == 0 {
		return d, local, false
	}
	if !v.alone {
		told := align(l, told, start)
		if unsynced := spent(l, own) - spent(l, told); unsynced > 0 && unsynced+cost > s.maxUnsynced {
			s.stats.unsynced.Add(1)
			return s.waitForExchange(*l, state(l, start, fleet), now), local, false
		}
	}
	own.cur += cost
	return d, state(l, start, own), true
}

// spend records local, written under l (e's limit) by an admission, as
// this instance's count of e, to be carried by the message of round.
// Called with e's shard locked.
func (e *entry) spend(l *limiter.Limit, local limiter.State, round uint64) {
	e.local = local
	e.changed = round
	e.expires = max(e.expires, expiry(l, local.A))
}

// waitForExchange is the decision on a request that the fleet's counts
// allow but that would take this instance more than MaxUnsynced beyond
// what the others acknowledged: denied, to be retried after the next
// exchange, with what the fleet's counts leave remaining.
func (s *Store) waitForExchange(l limiter.Limit, fleet limiter.State, now time.Time) limiter.Decision {
	d, _ := limiter.Decide(l, fleet, now, 0)
	d.Allowed, d.Reservation = false, limiter.Reservation{}
	d.RetryAfter = s.interval
	if d.Refill == 0 || d.Refill > s.interval {
		d.Refill = s.interval
	}
	d.Reset = max(d.Reset, d.Refill)
	return d
}

// toldState returns what this instance has told every peer of e's key, by
// v: the last message that carried it if every peer acknowledged that
// round, else the one before if they acknowledged that, else nothing; and
// nothing while some peer's own counts have not all arrived. Called with
// e's shard locked.
func (e *entry) toldState(v *view) limiter.State {
	if !v.synced {
		return limiter.State{}
	}
	if e.sentRound != 0 && e.sentRound <= v.minAcked {
		e.told, e.toldRound = e.sent, e.sentRound
	}
	if e.toldRound != 0 && e.toldRound <= v.minAcked {
		return e.told
	}
	return limiter.State{}
}
