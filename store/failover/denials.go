package failover

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/limiter"
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
	m  map[string]denial
}

type denial struct {
	cost  int64 // requests of this cost are denied...
	until time.Time
	d     limiter.Decision // ...with this answer, RetryAfter and Reset shortened as time passes
	at    time.Time
	limit limiter.Limit
}

func newDenials(maxEntries int) *denials {
	ds := &denials{seed: maphash.MakeSeed(), max: max(1, maxEntries/64)}
	for i := range ds.shards {
		ds.shards[i].m = map[string]denial{}
	}
	return ds
}

func (ds *denials) shard(key string) *denialShard {
	return &ds.shards[maphash.String(ds.seed, key)%uint64(len(ds.shards))]
}

// lookup returns the local answer for a request if its key is known to be
// denied at this same cost until later than now (a larger cost may have to
// wait longer, so it is not answered from a smaller one's denial), or for a
// look (cost 0) at such a key. A changed limit for the key
// (after a reload) is not answered from the old denial.
func (ds *denials) lookup(key string, cost int64, l limiter.Limit, now time.Time) (limiter.Decision, bool) {
	sh := ds.shard(key)
	sh.mu.Lock()
	e, ok := sh.m[key]
	if ok && !now.Before(e.until) {
		delete(sh.m, key)
		ok = false
	}
	sh.mu.Unlock()
	if !ok || e.limit != l || cost != e.cost && cost != 0 {
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
		d.Reset = max(0, d.Reset-now.Sub(e.at))
		return d, true
	}
	if d.RetryAfter != limiter.Never {
		d.RetryAfter = e.until.Sub(now)
	}
	d.Reset = max(0, d.Reset-now.Sub(e.at))
	return d, true
}

// remember records a denial from the shared store. Denials that would wait
// forever (cost above the limit) are remembered for a minute.
func (ds *denials) remember(key string, cost int64, l limiter.Limit, d limiter.Decision, now time.Time) {
	wait := d.RetryAfter
	if wait == limiter.Never {
		wait = time.Minute
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
