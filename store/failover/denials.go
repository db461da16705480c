package failover

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// denials remembers, per key, that requests of at least some cost are denied
// until a moment: the shared store's own answer, replayed locally.
type denials struct {
	seed   maphash.Seed
	shards [64]denialShard
	max    int // per shard
}

type denialShard struct {
	mu sync.Mutex
	m  map[store.Key]denial
}

type denial struct {
	cost  int64            // requests of this cost are denied...
	until time.Time        // ...and answered from memory until then...
	d     limiter.Decision // ...with this answer, RetryAfter, Reset and Refill shortened as time passes
	at    time.Time
	limit limiter.Limit
	// others are the decisions of the other rules of the request the
	// denial came from, when it came from DecideAll, in request order.
	others []companion
}

// companion is another rule's decision in a denied request: a look (cost
// 0 answer) at a rule with room, or a shadow rule's own denial.
type companion struct {
	key   store.Key
	cost  int64
	limit limiter.Limit
	d     limiter.Decision
}

// maxCompanionAge bounds how old the other rules' decisions may be when a
// denied request is answered again from memory: the RateLimit items of
// those rules in a 429 are at most this stale, and a caller hammering a
// limited path of several rules costs the shared store one call per this
// long at most.
const maxCompanionAge = time.Second

func newDenials(maxEntries int) *denials {
	ds := &denials{seed: maphash.MakeSeed(), max: max(1, maxEntries/64)}
	for i := range ds.shards {
		ds.shards[i].m = map[store.Key]denial{}
	}
	return ds
}

func (ds *denials) shard(key store.Key) *denialShard {
	h := maphash.String(ds.seed, key.String())
	return &ds.shards[h%uint64(len(ds.shards))]
}

// lookup returns the local answer for a request if its key is known to be
// denied at this same cost until later than now (a larger cost may have to
// wait longer, so it is not answered from a smaller one's denial), or for a
// look (cost 0) at such a key. A changed limit for the key
// (after a reload) is not answered from the old denial.
func (ds *denials) lookup(key store.Key, cost int64, l limiter.Limit, now time.Time) (limiter.Decision, bool) {
	e, ok := ds.get(key, now)
	if !ok {
		return limiter.Decision{}, false
	}
	return e.answer(cost, l, now)
}

// get returns key's denial if it runs later than now; one that has run out
// is dropped.
func (ds *denials) get(key store.Key, now time.Time) (denial, bool) {
	sh := ds.shard(key)
	sh.mu.Lock()
	e, ok := sh.m[key]
	if ok && !now.Before(e.until) {
		delete(sh.m, key)
		ok = false
	}
	sh.mu.Unlock()
	return e, ok
}

// answer is lookup's answer from e, a denial that has not run out by now.
func (e *denial) answer(cost int64, l limiter.Limit, now time.Time) (limiter.Decision, bool) {
	if e.limit != l || cost != e.cost && cost != 0 {
		return limiter.Decision{}, false
	}
	d := e.d
	if cost == 0 {
		// A look (as httplimit makes before spending several rules) is
		// allowed and sees the denial's Remaining, which is below the
		// denied cost until the denial runs out: the look finds no room,
		// and the spend that follows is denied from here too. So a limited
		// caller on a path of several rules does not reach Redis either.
		d.Allowed, d.RetryAfter = true, 0
		d.Reset, d.Refill = max(0, d.Reset-now.Sub(e.at)), max(0, d.Refill-now.Sub(e.at))
		return d, true
	}
	if d.RetryAfter != limiter.Never { // it runs to e.at+RetryAfter, no sooner than until
		d.RetryAfter -= now.Sub(e.at)
	}
	d.Reset, d.Refill = max(0, d.Reset-now.Sub(e.at)), max(0, d.Refill-now.Sub(e.at))
	return d, true
}

// remember records a denial from the shared store until its RetryAfter,
// or for a minute if it would wait forever (cost above the limit); but no
// longer than its Refill: until then nothing but time changes the answer
// (what other callers spend only makes it later), after it Remaining has
// grown, and an answer from memory would show the old Remaining and a
// Refill of 0.
func (ds *denials) remember(key store.Key, cost int64, l limiter.Limit, d limiter.Decision, now time.Time) {
	wait := d.RetryAfter
	if wait == limiter.Never {
		wait = time.Minute
	}
	if d.Refill > 0 {
		wait = min(wait, d.Refill)
	}
	sh := ds.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if len(sh.m) >= ds.max {
		for k, e := range sh.m { // drop what has run out; if nothing has, start over
			if !now.Before(e.until) {
				delete(sh.m, k)
			}
		}
		if len(sh.m) >= ds.max {
			clear(sh.m)
		}
	}
	sh.m[key] = denial{cost: cost, until: now.Add(wait), d: d, at: now, limit: l}
}

// attach records others as the companions of key's denial made at now, if
// that denial is still the one remembered.
func (ds *denials) attach(key store.Key, at time.Time, others []companion) {
	sh := ds.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if e, ok := sh.m[key]; ok && e.at.Equal(at) {
		e.others = others
		sh.m[key] = e
	}
}

// replay answers a whole request from memory: when one of its enforcing
// requests is remembered as denied at its cost, together with decisions of
// exactly the request's other requests made less than maxCompanionAge ago.
// The denial is answered as lookup answers it; the others as they were,
// their Reset, Refill and RetryAfter shortened by the time since.
func (ds *denials) replay(reqs []store.Request, now time.Time) ([]store.Result, bool) {
	for i, r := range reqs {
		if r.Shadow || r.Cost == 0 {
			continue
		}
		e, ok := ds.get(r.Key, now)
		elapsed := now.Sub(e.at)
		if !ok || e.others == nil || elapsed >= maxCompanionAge || elapsed < 0 || len(e.others) != len(reqs)-1 {
			continue
		}
		d, ok := e.answer(r.Cost, r.Limit, now)
		if !ok {
			continue
		}
		out := make([]store.Result, len(reqs))
		out[i].Decision = d
		if fillOthers(out, reqs, i, e.others, elapsed) {
			return out, true
		}
	}
	return nil, false
}

// fillOthers puts the companions' decisions, aged by elapsed, into out for
// every request but i, and reports whether they match those requests.
func fillOthers(out []store.Result, reqs []store.Request, i int, others []companion, elapsed time.Duration) bool {
	k := 0
	for j, r := range reqs {
		if j == i {
			continue
		}
		c := others[k]
		k++
		if c.key != r.Key || c.cost != r.Cost || c.limit != r.Limit {
			return false
		}
		d := c.d
		d.Reset, d.Refill = max(0, d.Reset-elapsed), max(0, d.Refill-elapsed)
		if !d.Allowed && d.RetryAfter != limiter.Never {
			if d.RetryAfter -= elapsed; d.RetryAfter <= 0 {
				return false // this denial has run out: ask again
			}
		}
		out[j].Decision = d
	}
	return true
}
