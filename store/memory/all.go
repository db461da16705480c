package memory

import (
	"context"
	"hash/maphash"
	"slices"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// smallAll is how many requests DecideAll decides without allocating
// (the rules of a request, in practice): its memory for them is on the
// stack, and zeroed on every call.
const smallAll = 4

// pending is one request of a DecideAll while it is decided on a copy
// (its decision is written to its result): its key's hash, the state the
// decision left (the copy) and, once committing, whether its key found no
// room (full).
type pending struct {
	h   uint64
	key string // the key's encoding
	st  limiter.State
	// orig is the state the store holds for the key, before any request
	// of the call, under the limit from (nil: none), for a look; first
	// tells the key's first request, which holds them.
	orig  limiter.State
	from  *limiter.Limit
	first bool
	full  bool
}

// DecideAll decides the requests of one HTTP request (one per matching
// rule) all or nothing, as store.Store says, computing first and
// committing after: it locks the shards of the keys (each once, in
// ascending order, so that two calls never wait for each other in a
// circle), decides every request in turn on a copy of its key's state (a
// key asked twice sees its first request), and writes the states back only
// if every request not marked Shadow was allowed. Otherwise it writes
// nothing: the denied requests answer their denial, the others a look
// (cost 0) at their key as it stands. It appends the results to dst and
// allocates nothing for up to four requests when dst has room (but for a
// sliding_log's copy). After Close it returns dst and store.ErrClosed.
//
// The one exception is a store out of room: a key it holds no state for
// and has no room for (or a sliding_log with no room for its entry) is
// decided on its overflow counter (see Decide), after the others have
// spent, so that its denial there does not give back what they spent.
func (s *Store) DecideAll(_ context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	var small [smallAll]pending
	var p []pending
	if len(reqs) <= smallAll {
		p = small[:len(reqs)]
	} else {
		p = make([]pending, len(reqs))
	}
	for i := range reqs {
		p[i].key = reqs[i].Key.String()
		p[i].h = maphash.String(s.seed, p[i].key)
	}
	var order [smallAll]uint64
	shards := s.lockShards(order[:0], p)
	if len(shards) > 0 && s.shards[shards[0]].closed {
		s.unlockShards(shards)
		return dst, store.ErrClosed
	}
	start := len(dst)
	for range reqs {
		dst = append(dst, store.Result{})
	}
	out := dst[start:]
	t := limiter.UnixMicro(now)
	pass := true
	for i := range reqs {
		s.peek(p, reqs, i, t, now, &out[i].Decision)
		pass = pass && (reqs[i].Shadow || out[i].Decision.Allowed)
	}
	if !pass {
		for i := range reqs {
			if out[i].Decision.Allowed {
				s.look(p, reqs, i, t, now, &out[i].Decision)
			}
		}
		s.unlockShards(shards)
		return dst, nil
	}
	full := s.commit(p, reqs, t, now, out)
	s.unlockShards(shards)
	if full {
		s.overflowAll(p, reqs, now, out)
	}
	return dst, nil
}

// lockShards locks the distinct shards of the keys of p in ascending
// order and returns them, appended to buf.
func (s *Store) lockShards(buf []uint64, p []pending) []uint64 {
	for i := range p {
		buf = append(buf, p[i].h&s.mask)
	}
	for i := 1; i < len(buf); i++ { // insertion sort: a few shards
		for j := i; j > 0 && buf[j] < buf[j-1]; j-- {
			buf[j], buf[j-1] = buf[j-1], buf[j]
		}
	}
	buf = slices.Compact(buf)
	for _, i := range buf {
		s.shards[i].mu.Lock()
	}
	return buf
}

// unlockShards unlocks the shards lockShards locked.
func (s *Store) unlockShards(shards []uint64) {
	for _, i := range shards {
		s.shards[i].mu.Unlock()
	}
}

// peek decides request i of reqs at t (now in microseconds) on a copy of
// its key's state, into p[i] and *d: the state the request before it on
// the same key left, if there is one, or else the shard's (locked), a
// fresh one for a key it does not hold. A state written under another
// limit is first reinterpreted, as Decide does.
func (s *Store) peek(p []pending, reqs []store.Request, i int, t int64, now time.Time, d *limiter.Decision) {
	r, q := &reqs[i], &p[i]
	var from *limiter.Limit
	for j := i - 1; j >= 0; j-- {
		if p[j].h == q.h && p[j].key == q.key {
			q.st, from = p[j].st, &reqs[j].Limit
			p[j].st.Log = nil // handed on: deciding on it may rewrite it
			break
		}
	}
	if from == nil {
		from = s.copyState(q.h, q.key, &q.st)
		q.orig.A, q.orig.B, q.from, q.first = q.st.A, q.st.B, from, true // not the log: deciding may rewrite it
	}
	if from != nil && !r.Limit.Same(from) {
		q.st = limiter.Reinterpret(*from, r.Limit, q.st, now)
	}
	r.Limit.ApplyMicros(&q.st, t, r.Cost, d)
}

// copyState writes to *st a copy of the state the store holds for key
// (whose hash is h; its shard is locked), which must be the zero State,
// and returns the limit it was written under; nil for a key it does not
// hold.
func (s *Store) copyState(h uint64, key string, st *limiter.State) *limiter.Limit {
	sh := &s.shards[h&s.mask]
	i := sh.tab.find(h, key)
	if i < 0 {
		return nil
	}
	e := sh.tab.at(i)
	st.A, st.B = e.a, e.b
	w := sh.limits.slot(e.limit)
	if w.log {
		st.Log = slices.Clone(sh.logs[e.key()]) // an admission rewrites a log in place
	}
	return &w.limit
}

// look writes to *d a look (cost 0) at t (now in microseconds) at the key
// of request i of reqs as the store holds it (its shard locked), writing
// nothing: from its first request's copy, or a new one for a sliding_log.
func (s *Store) look(p []pending, reqs []store.Request, i int, t int64, now time.Time, d *limiter.Decision) {
	r, q := &reqs[i], &p[i]
	r0 := q.key
	for j := i; !q.first; j-- {
		if p[j].h == q.h && p[j].first && p[j].key == r0 {
			q = &p[j]
		}
	}
	st, from := q.orig, q.from
	if r.Limit.Algorithm() == limiter.SlidingLog || from != nil && from.Algorithm() == limiter.SlidingLog {
		st = limiter.State{}
		from = s.copyState(q.h, q.key, &st)
	}
	if from != nil && !r.Limit.Same(from) {
		st = limiter.Reinterpret(*from, r.Limit, st, now)
	}
	r.Limit.ApplyMicros(&st, t, 0, d)
}

// commit keeps the decisions of reqs, in turn, their shards locked, out
// holding them. A key the shard holds under the request's limit, with no
// log, takes the state its copy left, as Decide's common case does; any
// other is decided again for good (to the same decision, but for a key
// that finds no room). It reports whether one found none (marked full in
// p, for overflowAll).
func (s *Store) commit(p []pending, reqs []store.Request, t int64, now time.Time, out []store.Result) (full bool) {
	for i := range reqs {
		r, q, d := &reqs[i], &p[i], &out[i].Decision
		sh := &s.shards[q.h&s.mask]
		if k := sh.tab.find(q.h, q.key); k >= 0 {
			e := sh.tab.at(k)
			if w := sh.limits.slot(e.limit); !w.log && r.Limit.Same(&w.limit) {
				sh.record(e, d.Allowed && d.Remaining > 0, expiryMicros(t, d.Reset), q.st.A, q.st.B)
				continue
			}
		}
		var err error
		*d, err = s.decideLocked(sh, q.h, &r.Key, &r.Limit, now, r.Cost)
		if err == errNoRoom {
			q.full, full = true, true
			continue
		}
		out[i].Err = err
	}
	return full
}

// overflowAll decides on their overflow counters the requests of reqs
// whose keys commit found no room for, into out, no shard locked.
func (s *Store) overflowAll(p []pending, reqs []store.Request, now time.Time, out []store.Result) {
	for i := range reqs {
		if !p[i].full {
			continue
		}
		r := &reqs[i]
		d, err := s.decideOverflow(r.Key.Rule(), r.Limit, now, r.Cost)
		out[i] = store.Result{Decision: d, Err: err, Shared: err == nil}
	}
}
