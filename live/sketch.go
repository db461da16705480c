package live

import "time"

// The two sketches of a rule share its entries: an entry is in the pool's
// index while either lists it, so a rule holds at most 2×top entries.
// Finding the entry to evict scans the sketch (top entries): that happens
// only when a counter not listed is refused, or uses more of its limit
// than the least of the used sketch, never for a listed counter.

// admit lists the counter h, seen at t, in the sketches that take it:
// the refusals sketch if it was limited (Space-Saving: in the place of
// the least refused, from its count), the used sketch if its share used
// beats the least listed. It returns nil if neither takes it.
func (rs *ruleState) admit(h uint64, t int64, limited bool, used float64) *entry {
	var base uint64
	inRefused := limited
	if inRefused && rs.nRefused >= rs.top {
		base = rs.evictRefused(t)
	}
	inUsed := used > 0 && (rs.nUsed < rs.top || used > rs.usedFloor(t))
	if inUsed && rs.nUsed >= rs.top {
		rs.evictUsed(t)
	}
	if !inRefused && !inUsed {
		return nil
	}
	e := rs.newEntry(h)
	e.inRefused, e.inUsed = inRefused, inUsed
	if inRefused {
		rs.nRefused++
		e.count, e.epoch = base, t/int64(time.Minute)
	}
	if inUsed {
		rs.nUsed++
	}
	return e
}

// promote lists a counter already listed by one sketch in the other, when
// it would be admitted to it.
func (rs *ruleState) promote(e *entry, t int64, limited bool, used float64) {
	if limited && !e.inRefused {
		var base uint64
		if rs.nRefused >= rs.top {
			base = rs.evictRefused(t)
		}
		e.inRefused, e.count, e.epoch = true, base, t/int64(time.Minute)
		rs.nRefused++
	}
	if !e.inUsed && used > 0 && (rs.nUsed < rs.top || used > rs.usedFloor(t)) {
		if rs.nUsed >= rs.top {
			rs.evictUsed(t)
		}
		e.inUsed = true
		rs.nUsed++
	}
}

// evictRefused takes the least refused entry (the one seen longest ago of
// equals, as at the last scan) out of the refusals sketch and returns its
// count.
func (rs *ruleState) evictRefused(t int64) uint64 {
	victim := rs.refusedVictims.pop(rs, t, inRefused, refusals)
	victim.inRefused = false
	rs.nRefused--
	c := decayed(victim.count, victim.epoch, t)
	rs.release(victim)
	return c
}

// evictUsed takes the entry with the least share used now (as at the last
// scan) out of the used sketch.
func (rs *ruleState) evictUsed(t int64) {
	victim := rs.usedVictims.pop(rs, t, inUsed, usedAt)
	victim.inUsed = false
	rs.nUsed--
	rs.release(victim)
}

// usedFloor is the least share used among the used sketch's entries, as at
// the last scan (at most a second ago): shares only fall between requests,
// so the floor is at most a second's fall too high.
func (rs *ruleState) usedFloor(t int64) float64 {
	if v := rs.usedVictims.peek(rs, t, inUsed, usedAt); v != nil {
		return v.score
	}
	return 0
}

func inRefused(e *entry) bool { return e.inRefused }

func inUsed(e *entry) bool { return e.inUsed }

func refusals(e *entry, t int64) float64 { return float64(decayed(e.count, e.epoch, t)) }

func usedAt(e *entry, t int64) float64 { return e.usedNow(t) }

// victimBatch is how many eviction candidates one scan of a sketch finds:
// a counter not listed that takes a listed one's place costs a scan of
// the sketch only once every victimBatch times.
const victimBatch = 16

// victims are the next entries a sketch evicts, lowest score first, as
// found by one scan at time at. An entry seen again since is skipped: its
// score changed.
type victims struct {
	v       [victimBatch]victim
	n, next int
	at      int64
}

type victim struct {
	e     *entry
	gen   uint32
	last  int64
	score float64
}

// peek returns the next victim still listed and unchanged, scanning the
// sketch again when none is left or the scan is a second old; nil for an
// empty sketch.
func (vs *victims) peek(rs *ruleState, t int64, in func(*entry) bool, score func(*entry, int64) float64) *victim {
	if t-vs.at >= int64(time.Second) || t < vs.at {
		vs.n = 0
	}
	for range 2 {
		for ; vs.next < vs.n; vs.next++ {
			v := &vs.v[vs.next]
			if v.e.gen == v.gen && v.e.last == v.last && in(v.e) {
				return v
			}
		}
		vs.scan(rs, t, in, score)
	}
	return nil
}

// pop is peek, taking the victim it returns.
func (vs *victims) pop(rs *ruleState, t int64, in func(*entry) bool, score func(*entry, int64) float64) *entry {
	v := vs.peek(rs, t, in, score)
	vs.next++
	return v.e
}

// scan finds the victimBatch entries of the sketch with the lowest score
// (of equals, the one seen longest ago).
func (vs *victims) scan(rs *ruleState, t int64, in func(*entry) bool, score func(*entry, int64) float64) {
	vs.n, vs.next, vs.at = 0, 0, t
	for _, e := range rs.pool {
		if !in(e) {
			continue
		}
		c := victim{e: e, gen: e.gen, last: e.last, score: score(e, t)}
		if vs.n == victimBatch && !c.before(&vs.v[vs.n-1]) {
			continue
		}
		i := min(vs.n, victimBatch-1)
		for ; i > 0 && c.before(&vs.v[i-1]); i-- {
			vs.v[i] = vs.v[i-1]
		}
		vs.v[i] = c
		vs.n = min(vs.n+1, victimBatch)
	}
}

func (v *victim) before(o *victim) bool {
	return v.score < o.score || v.score == o.score && v.last < o.last
}

// newEntry returns a zero entry for counter h, in the index: a free one,
// or a new one while the pool is below 2×top.
func (rs *ruleState) newEntry(h uint64) *entry {
	var e *entry
	if n := len(rs.free); n > 0 {
		e, rs.free = rs.free[n-1], rs.free[:n-1]
	} else {
		e = new(entry)
		rs.pool = append(rs.pool, e)
	}
	e.key = h
	rs.index[h] = e
	return e
}

// release returns e to the free list once neither sketch lists it.
func (rs *ruleState) release(e *entry) {
	if e.inRefused || e.inUsed {
		return
	}
	delete(rs.index, e.key)
	*e = entry{gen: e.gen + 1}
	rs.free = append(rs.free, e)
}
