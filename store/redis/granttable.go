package redis

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// grantShards is the number of shards of the grant table, each with its
// own lock.
const grantShards = 64

// grantTable holds this instance's quota grants and when each key was
// last decided (its hotness), bounded by GrantOptions.MaxKeys.
type grantTable struct {
	opts     GrantOptions
	perShard int
	seed     maphash.Seed
	shards   [grantShards]grantShard
	stats    GrantStats

	mu      sync.Mutex     // orders closing against flights.Add
	closing bool           // Close has begun: no flight starts
	flights sync.WaitGroup // flyGrants' goroutines
}

type grantShard struct {
	mu   sync.Mutex
	keys map[store.Key]*grantEntry
}

// grantEntry is one key's grant. Times are the now of decisions: the
// instance's clock, never compared with Redis TIME; the window's end is
// what Redis said was left of it, counted from a now taken before Redis
// was asked, so it never falls later than the window's real end.
type grantEntry struct {
	last      time.Time // the last decision asked here
	limit     limiter.Limit
	units     int64 // left to admit, at most the grant size (want)
	back      int64 // of units, those the last grant's reservation can give back
	granted   int64 // the last grant's size, as reserved in Redis
	res       limiter.Reservation
	at        time.Time // when the last grant was asked
	asked     time.Time // when the oldest of its units was: no decision before it is served
	expires   time.Time // the grant ends: TTL after it was asked, or its window's end
	windowEnd time.Time // the end of the window its units count in; zero for a bucket
	remaining int64     // the key's Remaining in Redis after the grant
	reset     time.Duration
	refill    time.Duration
	// A grant call is in flight (flying) under flyLimit. Requests under
	// that limit that the units cannot serve meanwhile queue (grantfly.go)
	// and go in the next call; having had to is what makes the key busy,
	// and a busy key takes its next grant before its units run out.
	flying   bool
	flyLimit limiter.Limit
	queue    []*grantWaiter
	busy     bool
}

// step is what take found a request should do.
type step int

const (
	direct step = iota // decide it one call per decision, as without grants
	served             // answered from the key's grant
	ahead              // served, and its caller starts the key's next grant call (flyGrants)
	fill               // take a grant: this request's caller does (fillGrant)
	wait               // a grant call is in flight on the key: join it (join)
	retry              // (a waiter's outcome) take again
)

// takeMode is what take may do besides serving.
type takeMode int

const (
	heldOnly takeMode = iota // serve or nothing (DecideHeld, takeAll)
	mayFill                  // a decision: note hotness; a hot key may fill
	mayAhead                 // as mayFill, and a busy key may refill ahead
)

func newGrantTable(opts GrantOptions) *grantTable {
	if opts.TTL == 0 {
		opts.TTL = DefaultGrantTTL
	}
	if opts.MaxKeys <= 0 {
		opts.MaxKeys = DefaultGrantKeys
	}
	g := &grantTable{opts: opts, perShard: max(1, opts.MaxKeys/grantShards), seed: maphash.MakeSeed()}
	for i := range g.shards {
		g.shards[i].keys = make(map[store.Key]*grantEntry)
	}
	return g
}

func (g *grantTable) shard(key store.Key) *grantShard {
	h := maphash.String(g.seed, key.String())
	return &g.shards[h%grantShards]
}

// want is the size of a grant under l.
func (g *grantTable) want(l limiter.Limit) int64 { return min(g.opts.Max, l.Burst()) }

// take answers r from its key's grant if it holds enough, else says what
// to do. With mayFill or mayAhead it notes the decision for the key's
// hotness, and a hot key with no grant call in flight gets one (fill),
// which the caller then makes; with mayAhead a busy key whose units fall
// to half a grant or fewer gets one too (ahead), while its units serve on.
func (g *grantTable) take(r store.Request, now time.Time, mode takeMode) (limiter.Decision, step) {
	if !grantable(r.Limit) || r.Cost < 1 || r.Cost > g.want(r.Limit) {
		return limiter.Decision{}, direct
	}
	sh := g.shard(r.Key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.keys[r.Key]
	if e == nil {
		if mode != heldOnly && (len(sh.keys) < g.perShard || sh.evict(now, g.opts.TTL)) {
			sh.keys[r.Key] = &grantEntry{last: now}
		}
		return limiter.Decision{}, direct
	}
	hot := !now.Before(e.last) && now.Sub(e.last) <= g.opts.TTL
	if mode != heldOnly && now.After(e.last) { // a decision: the key's hotness is judged once per decision
		e.last = now
	}
	if e.held(r.Limit, now) >= r.Cost {
		g.spend(e, r.Cost, true)
		d := e.served(now)
		if mode == mayAhead && e.busy && !e.flying && hot && e.units <= g.low(e.limit) {
			e.flying, e.flyLimit = true, e.limit
			return d, ahead
		}
		return d, served
	}
	switch {
	case e.flying:
		return limiter.Decision{}, wait
	case !hot || mode == heldOnly:
		return limiter.Decision{}, direct
	}
	e.flying, e.flyLimit = true, r.Limit
	return limiter.Decision{}, fill
}

// spend admits cost units of e's grant, counted as a call saved with
// saved.
func (g *grantTable) spend(e *grantEntry, cost int64, saved bool) {
	e.units -= cost
	e.back = min(e.back, e.units)
	if saved {
		g.stats.CallsSaved.Add(1)
	}
}

// untake gives back to r's grant what take took for it.
func (g *grantTable) untake(r store.Request) {
	sh := g.shard(r.Key)
	sh.mu.Lock()
	if e := sh.keys[r.Key]; e != nil && e.limit == r.Limit {
		e.units += r.Cost
		g.stats.CallsSaved.Add(-1)
	}
	sh.mu.Unlock()
}

// takeAll answers every request of reqs from grants, or none (false).
func (g *grantTable) takeAll(reqs []store.Request, now time.Time) ([]store.Result, bool) {
	out := make([]store.Result, len(reqs))
	for i, r := range reqs {
		d, st := g.take(r, now, heldOnly)
		if st != served {
			for _, t := range reqs[:i] {
				g.untake(t)
			}
			return nil, false
		}
		out[i].Decision = d
	}
	return out, true
}

// served is the decision of a request answered from e's grant at now: what
// Redis said after the grant, less the time since, with the units still
// held here as remaining; the grant's reservation, which limiter.Settle
// settles a request by.
func (e *grantEntry) served(now time.Time) limiter.Decision {
	since := max(now.Sub(e.at), 0)
	return limiter.Decision{Allowed: true, Limit: e.limit.Burst(), Remaining: min(e.remaining+e.units, e.limit.Burst()),
		Reset: max(e.reset-since, 0), Refill: max(e.refill-since, 0), Reservation: e.res}
}

// held is the units of e usable at now under l: 0 once its grant ended.
func (e *grantEntry) held(l limiter.Limit, now time.Time) int64 {
	if e.limit != l || !now.Before(e.expires) || now.Before(e.asked) {
		return 0
	}
	return e.units
}

// merge adds a grant of granted units under l, asked at now and answered
// d, to e, whose own units under l at now are old (0: what e holds is of
// another limit or ended, and never serves again).
func (g *grantTable) merge(e *grantEntry, l limiter.Limit, now time.Time, old int64, d limiter.Decision, granted int64) {
	g.stats.Grants.Add(1)
	if old == 0 {
		g.stats.UnitsExpired.Add(e.units)
		e.units, e.back = 0, 0
	}
	ends := e.expires
	window := windowLeft(l, d)
	if old == 0 || now.Before(e.asked) {
		e.asked = now
	}
	e.limit, e.granted, e.res, e.at = l, granted, d.Reservation, now
	e.remaining, e.reset, e.refill = d.Remaining, d.Reset, d.Refill
	e.units = old + granted
	e.back = min(e.units, granted)
	e.expires, e.windowEnd = now.Add(g.opts.TTL), time.Time{}
	if window > 0 {
		e.expires, e.windowEnd = now.Add(min(g.opts.TTL, window)), now.Add(window)
	}
	if old > 0 && ends.Before(e.expires) { // the older units end no later than they did
		e.expires = ends
	}
}

// land ends the multi-rule grant call in flight on key (grantAll), which
// asked at now under l with old units of its own grant in hand (taken out
// of it) and was answered d, granting granted units (0: none, or the call
// failed). The request that asked costs cost; land returns its decision.
// Requests that queued meanwhile are served from what is left, or take
// again.
func (g *grantTable) land(key store.Key, l limiter.Limit, now time.Time, old, cost int64, d limiter.Decision, granted int64) limiter.Decision {
	sh := g.shard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	e := sh.keys[key]
	defer g.release(e, now)
	if granted == 0 {
		e.units += old
		return d
	}
	if e.limit != l {
		old = 0
	}
	g.merge(e, l, now, old, d, granted)
	e.units -= cost
	e.back = min(e.back, e.units)
	return e.served(now)
}

// windowLeft is, for a window algorithm's decision d that spent, how long
// is left of the window its units count in; 0 for a bucket.
func windowLeft(l limiter.Limit, d limiter.Decision) time.Duration {
	switch l.Algorithm() {
	case limiter.FixedWindow:
		return d.Reset // the count returns at the window's end
	case limiter.SlidingWindow:
		return d.Reset - l.Period() // the current window's count weighs until a period after its end
	}
	return 0
}

// evict drops the keys of sh idle for longer than ttl that hold nothing,
// and reports whether it dropped any.
func (sh *grantShard) evict(now time.Time, ttl time.Duration) bool {
	n := len(sh.keys)
	for k, e := range sh.keys {
		if e.units == 0 && !e.flying && now.Sub(e.last) > ttl {
			delete(sh.keys, k)
		}
	}
	return len(sh.keys) < n
}

// grantBack is a grant's unused units to give back.
type grantBack struct {
	key     store.Key
	limit   limiter.Limit
	res     limiter.Reservation
	granted int64
	unused  int64
}

// sweep ends the grants that have ended at now (all of them, with all),
// returning those whose unused units may still go back (the others are
// counted as expired), and drops the keys idle for longer than TTL.
func (g *grantTable) sweep(now time.Time, all bool) []grantBack {
	var backs []grantBack
	for i := range g.shards {
		sh := &g.shards[i]
		sh.mu.Lock()
		for k, e := range sh.keys {
			if e.units > 0 && !e.flying && (all || !now.Before(e.expires)) {
				expired := e.units
				if e.back > 0 && (e.windowEnd.IsZero() || now.Before(e.windowEnd)) {
					backs = append(backs, grantBack{key: k, limit: e.limit, res: e.res, granted: e.granted, unused: e.back})
					expired -= e.back
				}
				g.stats.UnitsExpired.Add(expired)
				e.units, e.back = 0, 0
			}
			if e.units == 0 && !e.flying && now.Sub(e.last) > g.opts.TTL {
				delete(sh.keys, k)
			}
		}
		sh.mu.Unlock()
	}
	return backs
}

// low is the units at or below which a busy key under l refills ahead:
// half a grant.
func (g *grantTable) low(l limiter.Limit) int64 { return g.want(l) / 2 }
