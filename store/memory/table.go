package memory

import (
	"encoding/binary"
	"math/bits"
	"strings"
	"unsafe"
)

// minHomes is the fewest home positions a table that holds a key has.
const minHomes = 16

// entry is everything the store keeps about one key besides a sliding_log's
// entries, in 40 bytes: the key itself, its length and part of its hash,
// the algorithm's state (A and B of limiter.State) and the limit it was
// written under, when that state becomes equivalent to a fresh one, and
// when the key was last used.
type entry struct {
	// k is the store's copy of the key's bytes; a key of longKey bytes or
	// more has its length written before them as a uvarint (see key).
	k    *byte
	a, b int64
	// meta is 24 bits of the key's hash, the lowest of them set, above
	// the key's length up to longKey (metaOf). The hash places the entry,
	// so the table moves entries without reading their keys, and with the
	// length it tells almost every other key apart without reading
	// theirs. 0 marks a free position.
	meta uint32
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

// longKey is the length from which entry.meta does not hold a key's length
// and the key's copy starts with it.
const longKey = 0xff

// metaOf returns entry.meta for a key of n bytes whose store hash is h. The
// lower half of h picks the shard; metaOf takes the top 24 bits.
func metaOf(h uint64, n int) uint32 {
	return (uint32(h>>40)|1)<<8 | uint32(min(n, longKey))
}

// inUse reports whether the position holds a key.
func (e *entry) inUse() bool { return e.meta != 0 }

// key returns the key of e, which must be in use, without copying it.
func (e *entry) key() string {
	if n := e.meta & longKey; n < longKey {
		return unsafe.String(e.k, n)
	}
	return e.longKey()
}

// longKey is key for a key of longKey bytes or more.
func (e *entry) longKey() string {
	n, w := binary.Uvarint(unsafe.Slice(e.k, binary.MaxVarintLen64)) // the copy is longer than that
	return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(e.k), w)), n)
}

// copyKey returns the store's copy of key, as entry.k holds it.
func copyKey(key string) *byte {
	if len(key) < longKey {
		return unsafe.StringData(strings.Clone(key))
	}
	var n [binary.MaxVarintLen64]byte
	w := binary.PutUvarint(n[:], uint64(len(key)))
	b := make([]byte, w+len(key))
	copy(b[copy(b, n[:w]):], key)
	return &b[0]
}

// table is an open-addressing hash table from key to entry, one per shard,
// with the entries themselves in the positions (linear probing). It exists
// instead of a Go map for three reasons. A lookup is one random memory
// access, to the key's home position: the entry there (or just after it)
// holds the hash that tells the key apart, the state and the limit, and
// only the key's own bytes are read besides. It is small: the table grows
// by a quarter when 7/8 full, so a growing table is 70% to 87.5% full, and
// over 1M keys an idle key costs about 49 bytes besides its own bytes
// (bench/run.sh core, BenchmarkSluiceIdleKeyMemory), where sharded Go maps
// of the same 24 bytes of state, without the limit, cost about 77 (measured
// the same way with Go 1.26, the table swapped for a map[string]struct{a, b
// int64; expiry, use uint32}). And a map overwrites its stored key on every
// assignment, which would retain the caller's string instead of the store's
// copy.
//
// A key's home is among the first homes positions, scaled from its hash;
// the positions after them are a tail that the last homes' runs spill into,
// so that probing never wraps around. The entries of a run (positions in
// use, one after the other) are in the order of their metas (hash, then
// length), and so of their homes (as in Robin Hood hashing), so a lookup
// stops at the first entry whose meta is above the key's: a key that is
// absent costs about as few probes as one that is present, where plain
// linear probing would walk the rest of the run, dozens of entries at 7/8
// full. Removing an entry shifts back the entries after it in its run that
// are past their home, so there are no tombstones, and entries only ever
// move to lower positions: a walk that removes entries must walk from the
// last position to the first.
type table struct {
	ents  []entry
	homes int // positions a key's home can be: len(ents) less the tail
	n     int // positions in use
}

// home returns the home position of an entry whose meta is meta: its
// hash scaled to the homes. (Past 2^24 homes, not every position is a
// home: a shard of over 14M keys would find its runs longer.)
func (t *table) home(meta uint32) int {
	hi, _ := bits.Mul64(uint64(meta>>8)<<40, uint64(t.homes))
	return int(hi)
}

// end returns the number of positions: every entry is at a position below.
func (t *table) end() int { return len(t.ents) }

// at returns the entry at position i, 0 <= i < t.end().
func (t *table) at(i int) *entry { return &t.ents[i] }

// find returns the position of key's entry, or -1. h is the key's hash.
func (t *table) find(h uint64, key string) int {
	meta := metaOf(h, len(key)) // an empty table has no positions: home 0 is the end
	for i := t.home(meta); i < len(t.ents); i++ {
		e := &t.ents[i]
		if e.meta == meta && e.key() == key {
			return i
		}
		if e.meta == 0 || e.meta > meta { // key would sit before e
			return -1
		}
	}
	return -1
}

// insert adds an entry for a copy of key, which must not be present, and
// returns it. h is the key's hash.
func (t *table) insert(h uint64, key string) *entry {
	if (t.n+1)*8 > t.homes*7 {
		t.resize(max(minHomes, t.homes+t.homes/4))
	}
	e := entry{k: copyKey(key), meta: metaOf(h, len(key))}
	i := t.place(&e)
	for i < 0 { // the key's run is longer than the tail
		t.rebuild(t.homes, 2*t.tail())
		i = t.place(&e)
	}
	t.n++
	return &t.ents[i]
}

// place copies *e into its run, after the entries whose meta is at most
// its own and before the others, which move up one position, and returns
// its position, or -1 if the run would pass the end. The entries before
// its home have lower metas, their homes being lower.
func (t *table) place(e *entry) int {
	i := t.home(e.meta)
	for i < len(t.ents) && t.ents[i].meta != 0 && t.ents[i].meta <= e.meta {
		i++
	}
	free := i
	for free < len(t.ents) && t.ents[free].meta != 0 {
		free++
	}
	if free == len(t.ents) {
		return -1
	}
	copy(t.ents[i+1:free+1], t.ents[i:free])
	t.ents[i] = *e
	return i
}

// remove deletes the entry at position i. The entries after it in its run
// that are past their home move back one position (see table), so a
// caller walking the positions must walk them from the last to the first.
func (t *table) remove(i int) {
	t.n--
	j := i + 1
	for j < len(t.ents) && t.ents[j].meta != 0 && t.home(t.ents[j].meta) < j {
		j++
	}
	copy(t.ents[i:j-1], t.ents[i+1:j])
	t.ents[j-1] = entry{} // let the key's bytes be collected
}

// tail returns the number of positions after the homes.
func (t *table) tail() int { return len(t.ents) - t.homes }

// resize rebuilds the table with the given number of homes and a tail of
// up to 64 positions, enough for the runs of a good hash.
func (t *table) resize(homes int) { t.rebuild(homes, min(homes, 64)) }

// rebuild moves the entries to new positions: homes, then a tail of at
// least tail positions, more if the runs need it (a hash that places many
// keys at one home).
func (t *table) rebuild(homes, tail int) {
	old := t.ents
	for {
		t.ents, t.homes = make([]entry, homes+tail), homes
		if t.placeAll(old) {
			return
		}
		tail *= 2
	}
}

// placeAll places every entry of old in the table and reports whether they
// all found a position.
func (t *table) placeAll(old []entry) bool {
	for i := range old {
		if old[i].meta != 0 && t.place(&old[i]) < 0 {
			return false
		}
	}
	return true
}

// shrink gives memory back after many removals: when at most an eighth of
// the homes are in use, the table is rebuilt half full.
func (t *table) shrink() {
	if t.homes > minHomes && t.n*8 <= t.homes {
		t.resize(max(minHomes, 2*t.n))
	}
}

// reset forgets every entry and releases the memory.
func (t *table) reset() { *t = table{} }
