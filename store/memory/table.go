package memory

import (
	"encoding/binary"
	"math/bits"
	"unsafe"
)

// minHomes is the fewest home positions a table that holds a key has.
const minHomes = 16

// entry is everything the store keeps about one key besides a sliding_log's
// entries, in 40 bytes: the key itself and its hash, the algorithm's state
// (A and B of limiter.State) and the limit it was written under, when that
// state becomes equivalent to a fresh one, and when the key was last used.
type entry struct {
	// k is the store's copy of the key: its length as a uvarint, then its
	// bytes (see key). A string header would take 8 more bytes.
	k    *byte
	a, b int64
	// hash is the upper half of the key's hash with its lowest bit set
	// (table.hashOf): it places the entry, so the table moves entries
	// without reading their keys, and tells almost every other key apart
	// without reading theirs. 0 marks a free position.
	hash uint32
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

// inUse reports whether the position holds a key.
func (e *entry) inUse() bool { return e.hash != 0 }

// key returns the key of e, which must be in use, without copying it.
func (e *entry) key() string {
	if n := *e.k; n < 0x80 { // a key shorter than 128 bytes, its length in one byte
		return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(e.k), 1)), n)
	}
	return e.longKey()
}

// longKey is key for a key of 128 bytes or more, whose length takes
// several bytes to write: its copy holds more than MaxVarintLen64 bytes.
func (e *entry) longKey() string {
	n, w := binary.Uvarint(unsafe.Slice(e.k, binary.MaxVarintLen64))
	return unsafe.String((*byte)(unsafe.Add(unsafe.Pointer(e.k), w)), n)
}

// copyKey returns the store's copy of key, as entry.k holds it. The copy
// of the empty key has a byte to spare, so that the pointer to its bytes
// that key makes points inside it.
func copyKey(key string) *byte {
	var n [binary.MaxVarintLen64]byte
	w := binary.PutUvarint(n[:], uint64(len(key)))
	b := make([]byte, max(w+len(key), 2))
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
// over 1M keys an idle key costs about 56 bytes besides its own bytes
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
// use, one after the other) are in the order of their hashes, and so of
// their homes (as in Robin Hood hashing), so a lookup stops at the first
// entry whose hash is above the key's: a key that is absent costs about as
// few probes as one that is present, where plain linear probing would walk
// the rest of the run, dozens of entries at 7/8 full. Removing an entry shifts back the entries
// after it in its run that are past their home, so there are no
// tombstones, and entries only ever move to lower positions: a walk that
// removes entries must walk from the last position to the first.
type table struct {
	ents  []entry
	homes int // positions a key's home can be: len(ents) less the tail
	n     int // positions in use
}

// hashOf returns the hash an entry keeps of a key whose store hash is h.
// The lower half of h picks the shard.
func hashOf(h uint64) uint32 { return uint32(h>>32) | 1 }

// home returns the home position of an entry's hash.
func (t *table) home(hash uint32) int {
	hi, _ := bits.Mul64(uint64(hash)<<32, uint64(t.homes))
	return int(hi)
}

// end returns the number of positions: every entry is at a position below.
func (t *table) end() int { return len(t.ents) }

// at returns the entry at position i, 0 <= i < t.end().
func (t *table) at(i int) *entry { return &t.ents[i] }

// find returns the position of key's entry, or -1. h is the key's hash.
func (t *table) find(h uint64, key string) int {
	hash := hashOf(h) // an empty table has no positions: home 0 is the end
	for i := t.home(hash); i < len(t.ents); i++ {
		e := &t.ents[i]
		if e.hash == hash && e.key() == key {
			return i
		}
		if e.hash == 0 || e.hash > hash { // key would sit before e
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
	e := entry{k: copyKey(key), hash: hashOf(h)}
	i := t.place(&e)
	for i < 0 { // the key's run is longer than the tail
		t.rebuild(t.homes, 2*t.tail())
		i = t.place(&e)
	}
	t.n++
	return &t.ents[i]
}

// place copies *e into its run, after the entries whose hash is at most
// its own and before the others, which move up one position, and returns
// its position, or -1 if the run would pass the end. The entries before
// its home have lower hashes, their homes being lower.
func (t *table) place(e *entry) int {
	i := t.home(e.hash)
	for i < len(t.ents) && t.ents[i].hash != 0 && t.ents[i].hash <= e.hash {
		i++
	}
	free := i
	for free < len(t.ents) && t.ents[free].hash != 0 {
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
	for j < len(t.ents) && t.ents[j].hash != 0 && t.home(t.ents[j].hash) < j {
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
		if old[i].hash != 0 && t.place(&old[i]) < 0 {
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
