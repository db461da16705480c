package memory

import (
	"math"
	"strings"
	"unsafe"
)

// chunkLen is how many entries one chunk of a table holds. 256 entries of
// 40 bytes fill a 10 KiB allocation, which is a size class of its own, so
// no memory is lost to rounding.
const (
	chunkBits = 8
	chunkLen  = 1 << chunkBits
	minSlots  = 16
)

// entry is everything the store keeps about one key besides a sliding_log's
// entries, in 40 bytes: the key itself, the algorithm's state (A and B of
// limiter.State) and the limit it was written under, when that state
// becomes equivalent to a fresh one, and when the key was last used.
type entry struct {
	// k and n are the store's copy of the key, its bytes and its length
	// (see key): half a string header, which would make the entry 48
	// bytes. A key of 4 GiB or more is never stored.
	k    *byte
	a, b int64
	n    uint32
	// limit is the index, in the shard's limits, of the limit the state
	// was written under: a decision under another limit reinterprets the
	// state first (limiter.Reinterpret).
	limit uint32
	// expiry is the second (since the Unix epoch, rounded up) from which
	// the state can no longer change a decision and may be forgotten.
	expiry uint32
	// use is the shard's tick at the key's last decision, shifted left by
	// flagBits; the low bits are flags (limitedBit, reservedBit).
	use uint32
}

// maxKeyLen is the length from which a key is too long to be stored
// (entry.n): its requests are decided on its overflow counter.
const maxKeyLen = math.MaxUint32

// key returns the key of e, which must be in use, without copying it.
func (e *entry) key() string { return unsafe.String(e.k, e.n) }

// table is an open-addressing hash table from key to entry, one per shard.
// It exists instead of a Go map for two reasons. It is smaller: over 1M
// keys it costs about 60 bytes per key besides the key's own bytes
// (BenchmarkIdleKeyMemory), where sharded Go maps of the same 24 bytes of
// state, without the limit, cost about 77 (measured the same way with Go
// 1.26, the table swapped for a map[string]struct{a, b int64; expiry, use
// uint32}). And a map overwrites its stored key on every assignment, which
// would retain the caller's string instead of the store's copy.
//
// Entries are kept dense in fixed-size chunks, so that removing one moves
// the last entry into the hole and iteration is a loop over indices. Slots
// use linear probing; each holds the upper 32 bits of the key's hash (to
// place it and to skip most non-matching keys without touching the entry)
// and the entry's index plus one (0 marks an empty slot). Deletion shifts
// the following slots back, so there are no tombstones.
type table struct {
	slots  []uint64
	chunks []*[chunkLen]entry
	n      int                 // entries in use: indices 0 to n-1
	hash   func(string) uint64 // the hash that placed each key
}

// at returns entry i, 0 <= i < t.n.
func (t *table) at(i int) *entry {
	return &t.chunks[i>>chunkBits][i&(chunkLen-1)]
}

// find returns the index of key's entry, or -1. h is hash(key).
func (t *table) find(h uint64, key string) int {
	if len(t.slots) == 0 {
		return -1
	}
	mask := uint64(len(t.slots) - 1)
	tag := h >> 32
	for i := tag & mask; ; i = (i + 1) & mask {
		v := t.slots[i]
		if v == 0 {
			return -1
		}
		if v>>32 == tag {
			if idx := int(uint32(v)) - 1; t.at(idx).key() == key {
				return idx
			}
		}
	}
}

// insert adds an entry for a copy of key, which must not be present and
// must be shorter than maxKeyLen, and returns it. h is hash(key).
func (t *table) insert(h uint64, key string) *entry {
	if (t.n+1)*4 > len(t.slots)*3 {
		t.resize(max(minSlots, len(t.slots)*2))
	}
	if t.n == len(t.chunks)*chunkLen {
		t.chunks = append(t.chunks, new([chunkLen]entry))
	}
	idx := t.n
	t.n++
	t.place(h>>32<<32 | uint64(idx+1))
	e := t.at(idx)
	e.k, e.n = unsafe.StringData(strings.Clone(key)), uint32(len(key))
	return e
}

// place puts slot value v in the first free slot from its home position.
func (t *table) place(v uint64) {
	mask := uint64(len(t.slots) - 1)
	i := v >> 32 & mask
	for t.slots[i] != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = v
}

// slotOf returns the position of the slot pointing at entry idx.
func (t *table) slotOf(idx int) uint64 {
	mask := uint64(len(t.slots) - 1)
	want := uint32(idx + 1)
	for i := t.hash(t.at(idx).key()) >> 32 & mask; ; i = (i + 1) & mask {
		if uint32(t.slots[i]) == want {
			return i
		}
	}
}

// remove deletes entry idx. The last entry moves into its place, so a
// caller walking the entries must walk them from the last to the first.
func (t *table) remove(idx int) {
	t.deleteSlot(t.slotOf(idx))
	last := t.n - 1
	if idx != last {
		j := t.slotOf(last)
		t.slots[j] = t.slots[j]>>32<<32 | uint64(idx+1)
		*t.at(idx) = *t.at(last)
	}
	*t.at(last) = entry{} // let the key's bytes be collected
	t.n--
}

// deleteSlot empties slot j and shifts back the slots after it that would
// otherwise no longer be found from their home position.
func (t *table) deleteSlot(j uint64) {
	mask := uint64(len(t.slots) - 1)
	for {
		t.slots[j] = 0
		k := j
		for {
			k = (k + 1) & mask
			v := t.slots[k]
			if v == 0 {
				return
			}
			// v may move to j unless its home lies cyclically in (j, k].
			home := v >> 32 & mask
			if (k-home)&mask >= (k-j)&mask {
				t.slots[j] = v
				j = k
				break
			}
		}
	}
}

// resize rebuilds the slots with n positions (a power of two).
func (t *table) resize(n int) {
	old := t.slots
	t.slots = make([]uint64, n)
	for _, v := range old {
		if v != 0 {
			t.place(v)
		}
	}
}

// shrink gives memory back after many removals: chunks past the entries in
// use (keeping one spare) and slots that are less than 1/8 full.
func (t *table) shrink() {
	need := (t.n + chunkLen - 1) / chunkLen
	for len(t.chunks) > need+1 {
		t.chunks[len(t.chunks)-1] = nil
		t.chunks = t.chunks[:len(t.chunks)-1]
	}
	if len(t.slots) > minSlots && t.n*8 < len(t.slots) {
		n := minSlots
		for n*3 < t.n*8 { // load at most 3/8 after shrinking
			n *= 2
		}
		t.resize(n)
	}
}

// reset forgets every entry and releases the memory.
func (t *table) reset() {
	t.slots, t.chunks, t.n = nil, nil, 0
}
