package gossip

import (
	"context"
	"slices"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// smallAll is how many requests DecideAll decides without allocating (the
// rules of a request, in practice): its memory for them is on the stack.
const smallAll = 4

// pending is one request of a DecideAll while it is decided: the key it
// is decided on and the counts its decision leaves.
type pending struct {
	key string
	// sh is the key's shard; -1 for a request decided without a key (a
	// zero Limit, a negative cost, an algorithm the store does not keep).
	sh int
	// overflow reports that key is the request's rule's overflow counter.
	overflow bool

	// prev is the request before it in the call on the same key, or -1;
	// e is the key's entry, nil for a key not held (set by resolve).
	prev int
	e    *entry
	// local and told are the key's counts once the request is decided,
	// under its limit; spends reports that it spent (set by weighAll).
	local, told limiter.State
	spends      bool
}

// DecideAll decides the requests of one HTTP request (one per matching
// rule) all or nothing, as store.Store says, computing first and
// committing after: it locks the shards of the keys (each once, in
// ascending order, so that two calls never wait for each other in a
// circle), decides every request in turn as Decide would (a key asked
// twice sees its first request), on the fleet's counts and within
// MaxUnsynced, and keeps this instance's new counts only if every request
// not marked Shadow was allowed. Otherwise it keeps nothing: the denied
// requests answer their denial (a wait for the next exchange among them),
// the others a look (cost 0) at their key as it stands.
//
// A new key that finds no room, or one too long for a message, is decided
// on its rule's overflow counter, within the same step (Result.Shared). A
// request under an algorithm the store does not keep answers an error in
// its Result and stops no other. DecideAll appends the results to dst and
// allocates nothing for up to four requests on keys it holds when dst has
// room. After Close it returns dst and store.ErrClosed.
func (s *Store) DecideAll(_ context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	if s.closed.Load() {
		return dst, store.ErrClosed
	}
	if s.afterClosedCheck != nil {
		s.afterClosedCheck()
	}
	var small [smallAll]pending
	p := small[:0]
	if len(reqs) > smallAll {
		p = make([]pending, 0, len(reqs))
	}
	start := len(dst)
	dst = slices.Grow(dst, len(reqs))
	for i := range reqs {
		dst = append(dst, store.Result{})
		p = append(p, s.place(&reqs[i], now, &dst[start+i]))
	}
	out := dst[start:]
	t := limiter.UnixMicro(now)
	var buf [smallAll]int
	for {
		shards := s.lockShards(buf[:0], p)
		if s.closed.Load() { // Close began since the first look: see decide
			s.unlockShards(shards)
			return dst[:start], store.ErrClosed
		}
		if i := s.resolve(p, reqs, t); i >= 0 {
			s.unlockShards(shards)
			p[i].key, p[i].overflow = overflowKey(reqs[i].Key.Rule(), reqs[i].Limit), true
			p[i].sh = s.tab.index(p[i].key)
			continue // its shard may be another: lock again
		}
		v := s.view.Load()
		s.weighAll(p, reqs, now, t, v, out)
		if pass(reqs, out) {
			s.commit(p, reqs, now, s.round.Load())
		} else {
			s.lookAll(p, reqs, now, t, v, out)
		}
		s.unlockShards(shards)
		return dst, nil
	}
}

// place returns the pending of r: its key, or its rule's overflow counter
// for a key too long for a message. A request decided without a key (a
// zero Limit, a negative cost, an unkept algorithm) is answered into res.
func (s *Store) place(r *store.Request, now time.Time, res *store.Result) pending {
	switch {
	case r.Limit.IsZero() || r.Cost < 0:
		res.Decision, _ = limiter.Decide(r.Limit, limiter.State{}, now, r.Cost)
		return pending{sh: -1}
	case !Supported(r.Limit.Algorithm()):
		res.Err = unsupported(r.Limit)
		return pending{sh: -1}
	case r.Key.Len() > maxKeyLen: // the others would refuse every message carrying it
		key := overflowKey(r.Key.Rule(), r.Limit)
		return pending{key: key, sh: s.tab.index(key), overflow: true}
	}
	key := r.Key.String()
	return pending{key: key, sh: s.tab.index(key)}
}

// lockShards locks the distinct shards of p in ascending order and
// returns them, appended to buf.
func (s *Store) lockShards(buf []int, p []pending) []int {
	for i := range p {
		if p[i].sh < 0 {
			continue
		}
		k := len(buf)
		for k > 0 && buf[k-1] > p[i].sh { // insertion: a few shards
			k--
		}
		if k > 0 && buf[k-1] == p[i].sh {
			continue
		}
		buf = append(buf, 0)
		copy(buf[k+1:], buf[k:])
		buf[k] = p[i].sh
	}
	for _, i := range buf {
		s.tab.shards[i].mu.Lock()
	}
	return buf
}

// unlockShards unlocks the shards lockShards locked.
func (s *Store) unlockShards(shards []int) {
	for _, i := range shards {
		s.tab.shards[i].mu.Unlock()
	}
}

// resolve finds, in turn, the counts each request of p with a key is
// decided on, their shards locked, changing no key but to drop expired
// ones: those the request before it on the same key in the call leaves
// (its prev), or else those the store holds (its entry; none for a key not
// held). It returns the first request of a cost on a new key that finds no
// room in its shard, even once the shard's expired keys are dropped
// (counting the new keys of the requests before it there), to be decided
// on its overflow counter instead; -1 when there is none.
func (s *Store) resolve(p []pending, reqs []store.Request, t int64) int {
	for {
		full, dropped := s.resolveOnce(p, reqs, t)
		if !dropped {
			return full
		}
		// A request before it may have found an entry that is dropped now:
		// again, with the keys that are left.
	}
}

// resolveOnce is one pass of resolve: it stops at the first request that
// finds no room (full), or where dropping expired keys made room (dropped).
func (s *Store) resolveOnce(p []pending, reqs []store.Request, t int64) (full int, dropped bool) {
	for i := range p {
		q := &p[i]
		if q.sh < 0 {
			continue
		}
		sh := &s.tab.shards[q.sh]
		q.prev, q.e = samePrev(p, i), nil
		switch {
		case q.prev >= 0:
			q.e = p[q.prev].e
		case sh.keys[q.key] != nil:
			q.e = sh.keys[q.key]
		case reqs[i].Cost > 0 && !q.overflow && len(sh.keys) >= s.tab.max-newBefore(p, reqs, i):
			n := len(sh.keys)
			sh.dropExpired(t)
			if len(sh.keys) < n {
				return -1, true
			}
			return i, false
		}
	}
	return -1, false
}

// weighAll decides every request of reqs with a key in turn, once resolve
// found its counts, into p and out, changing no key: each on its key's
// counts as the request before it on the same key left them (a key asked
// twice sees its first request), or else as the store holds them.
func (s *Store) weighAll(p []pending, reqs []store.Request, now time.Time, t int64, v *view, out []store.Result) {
	for i := range p {
		q, r := &p[i], &reqs[i]
		if q.sh < 0 {
			continue
		}
		var from *limiter.Limit
		var peers []party
		switch {
		case q.prev >= 0:
			q.local, q.told, from = p[q.prev].local, p[q.prev].told, &reqs[q.prev].Limit
		case q.e != nil:
			q.local, q.told, from = q.e.local, q.e.toldState(v), &q.e.limit
		}
		if from != nil && !from.Same(&r.Limit) {
			q.local = limiter.Reinterpret(*from, r.Limit, q.local, now)
			q.told = limiter.Reinterpret(*from, r.Limit, q.told, now)
		}
		if q.e != nil {
			peers = q.e.peers
		}
		out[i].Decision, q.local, q.spends = s.weigh(peers, q.local, q.told, &r.Limit, now, t, r.Cost, v)
		out[i].Shared = q.overflow
	}
}

// samePrev returns the request before i in p on the same key, or -1.
func samePrev(p []pending, i int) int {
	for j := i - 1; j >= 0; j-- {
		if p[j].sh == p[i].sh && p[j].key == p[i].key {
			return j
		}
	}
	return -1
}

// newBefore counts the keys the requests before i would add to i's shard:
// the first requests of a cost on keys it does not hold.
func newBefore(p []pending, reqs []store.Request, i int) int {
	n := 0
	for j := range i {
		if p[j].sh == p[i].sh && p[j].prev < 0 && p[j].e == nil && reqs[j].Cost > 0 && !p[j].overflow {
			n++
		}
	}
	return n
}

// pass reports whether every request not marked Shadow was allowed (one
// that answered an error stops none).
func pass(reqs []store.Request, out []store.Result) bool {
	for i := range reqs {
		if !reqs[i].Shadow && out[i].Err == nil && !out[i].Decision.Allowed {
			return false
		}
	}
	return true
}

// commit keeps, in turn, what each request of p with a key left, their
// shards locked, as a Decide of it would: the counts of one that spent,
// for the message of round to carry, on a key the store adds if it does
// not hold it (resolve found it room); and of every one, a key held under
// another limit read under the request's (reinterpreted at now, what it
// told as well).
func (s *Store) commit(p []pending, reqs []store.Request, now time.Time, round uint64) {
	for i := range p {
		q, l := &p[i], &reqs[i].Limit
		if q.sh < 0 {
			continue
		}
		sh := &s.tab.shards[q.sh]
		e := sh.keys[q.key]
		switch {
		case e == nil && !q.spends: // a look, or a denial, at a key nobody counted
			continue
		case e == nil:
			e = &entry{limit: *l}
			sh.keys[q.key] = e
		case !e.limit.Same(l):
			e.sent = limiter.Reinterpret(e.limit, *l, e.sent, now)
			e.told = limiter.Reinterpret(e.limit, *l, e.told, now)
			e.limit = *l
		}
		if q.spends {
			e.spend(l, q.local, round)
		} else {
			e.local = q.local
		}
	}
}

// lookAll answers each allowed request of reqs a look (cost 0) at its key
// as the store holds it, their shards locked, into out.
func (s *Store) lookAll(p []pending, reqs []store.Request, now time.Time, t int64, v *view, out []store.Result) {
	for i := range p {
		q, r := &p[i], &reqs[i]
		if q.sh < 0 || !out[i].Decision.Allowed {
			continue
		}
		var local limiter.State
		var peers []party
		if q.e != nil {
			local, peers = q.e.local, q.e.peers
			if !q.e.limit.Same(&r.Limit) {
				local = limiter.Reinterpret(q.e.limit, r.Limit, local, now)
			}
		}
		out[i].Decision, _, _ = s.weigh(peers, local, limiter.State{}, &r.Limit, now, t, 0, v)
	}
}
