package memory

import "github.com/sluice-rl/sluice/limiter"

// limits is a shard's table of the limits its entries were written under.
// An entry holds a 4-byte index into it (entry.limit) rather than the
// limit, 72 bytes, or a unique.Handle of it, 8 bytes that would make every
// entry 48 bytes instead of 40 (BenchmarkIdleKeyMemory). Each limit counts
// the entries that hold it and is forgotten with the last of them, so the
// table never holds more limits than the shard holds keys, and a limit
// that a reload retired goes once its keys have.
type limits struct {
	all   []limitSlot
	index map[limiter.Limit]uint32 // the slot of each limit in use
	free  []uint32                 // slots in all that hold no limit
	last  uint32                   // the slot that ref last returned
}

// limitSlot is one limit of the table and how many entries hold it.
type limitSlot struct {
	limit limiter.Limit
	refs  int
	// log is whether limit is a sliding_log, read here because
	// Limit.Algorithm, a method on the value, copies the limit first.
	log bool
}

// at returns limit i, which an entry holds.
func (t *limits) at(i uint32) *limiter.Limit { return &t.all[i].limit }

// slot returns slot i, which holds a limit an entry holds.
func (t *limits) slot(i uint32) *limitSlot { return &t.all[i] }

// ref returns the index of l for an entry that holds it from now on.
func (t *limits) ref(l *limiter.Limit) uint32 {
	i := t.last
	if int(i) >= len(t.all) || t.all[i].refs == 0 || !t.all[i].limit.Same(l) { // not the last one
		var ok bool
		if i, ok = t.index[*l]; !ok {
			i = t.add(*l)
		}
		t.last = i
	}
	t.all[i].refs++
	return i
}

// add puts l, which the table does not hold, in a free slot and returns
// the slot.
func (t *limits) add(l limiter.Limit) uint32 {
	var i uint32
	if n := len(t.free); n > 0 {
		i, t.free = t.free[n-1], t.free[:n-1]
	} else {
		i = uint32(len(t.all))
		t.all = append(t.all, limitSlot{})
	}
	t.all[i].limit, t.all[i].log = l, l.Algorithm() == limiter.SlidingLog
	if t.index == nil {
		t.index = make(map[limiter.Limit]uint32)
	}
	t.index[l] = i
	return i
}

// unref tells the table that an entry no longer holds limit i.
func (t *limits) unref(i uint32) {
	s := &t.all[i]
	if s.refs--; s.refs == 0 {
		delete(t.index, s.limit)
		s.limit, s.log = limiter.Limit{}, false
		t.free = append(t.free, i)
	}
}

// reset forgets every limit, when the table's entries are all forgotten.
func (t *limits) reset() { *t = limits{} }
