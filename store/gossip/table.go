package gossip

import (
	"hash/maphash"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// party is another instance's counts for one key, as it last told them:
// its state under the limit it decided under.
type party struct {
	slot  uint32 // the instance (peerTable.slots)
	limit limiter.Limit
	st    limiter.State
}

// entry is everything one instance knows of one key.
type entry struct {
	limit limiter.Limit // the limit local was written under
	local limiter.State // what this instance admitted
	// changed is the round whose message must carry local next: set to the
	// round being prepared at each change, so that a message of a later
	// round, or one built since a round the peers acknowledged, carries it.
	changed uint64
	// sent is local as the message of round sentRound carried it; told is
	// local as an earlier message (of toldRound) carried it, one every peer
	// acknowledged. What this instance has told the others is sent once
	// every peer acknowledged sentRound, else told once they acknowledged
	// toldRound, else nothing (a peer that joined since has heard nothing).
	sent, told           limiter.State
	sentRound, toldRound uint64
	peers                []party
	// expires is when every count the entry holds has left the windows a
	// decision reads (µs since the epoch): the entry can then be dropped.
	expires int64
}

// table is the store's keys, in shards of one mutex and one map each.
type table struct {
	seed   maphash.Seed
	shards []shard
	max    int // keys per shard
}

type shard struct {
	mu      sync.Mutex
	keys    map[string]*entry
	dropped uint64 // keys told by others that found no room
	_       [40]byte
}

func newTable(maxKeys, shards int) *table {
	t := &table{seed: maphash.MakeSeed(), shards: make([]shard, shards), max: max(1, maxKeys/shards)}
	for i := range t.shards {
		t.shards[i].keys = make(map[string]*entry)
	}
	return t
}

func (t *table) shard(key string) *shard { return &t.shards[t.index(key)] }

// index returns the index of key's shard.
func (t *table) index(key string) int {
	return int(maphash.String(t.seed, key) % uint64(len(t.shards)))
}

// expiry is when a state of l written in the window starting at start no
// longer counts: two periods on (sliding_window reads the previous window).
func expiry(l *limiter.Limit, start int64) int64 {
	return start + 2*int64(l.Period()/time.Microsecond)
}

// room reports whether sh can take a new key at now (µs), dropping its
// expired keys first when it is full. Called with sh.mu held.
func (sh *shard) room(max int, now int64) bool {
	if len(sh.keys) < max {
		return true
	}
	sh.dropExpired(now)
	return len(sh.keys) < max
}

// dropExpired removes the keys whose counts have all expired at now, and
// the counts of other instances that have. Called with sh.mu held.
func (sh *shard) dropExpired(now int64) {
	for k, e := range sh.keys {
		if e.expires <= now {
			delete(sh.keys, k)
		}
	}
}

// sweep drops the expired keys of every shard at now, one shard at a time.
func (t *table) sweep(now int64) {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		sh.dropExpired(now)
		sh.mu.Unlock()
	}
}

// merge records st, written by the instance in slot under l, as that
// instance's counts of e: a later window replaces an earlier one, and in
// one window each count keeps the larger of what was heard (an instance's
// counts only grow within a window, so a message heard twice or late
// changes nothing).
func (e *entry) merge(slot uint32, l limiter.Limit, st limiter.State) {
	e.expires = max(e.expires, expiry(&l, st.A))
	for i := range e.peers {
		p := &e.peers[i]
		if p.slot != slot {
			continue
		}
		switch {
		case st.A > p.st.A || !p.limit.Same(&l):
			p.limit, p.st = l, st
		case st.A == p.st.A:
			p.st.B = max(p.st.B>>32, st.B>>32)<<32 | max(p.st.B&0xffffffff, st.B&0xffffffff)
		}
		return
	}
	e.peers = append(e.peers, party{slot: slot, limit: l, st: st})
}

// dropStale forgets the counts of other instances that no longer count at
// now (µs), so that an entry's peers are bounded by the instances that
// counted the key within two periods.
func (e *entry) dropStale(now int64) {
	kept := e.peers[:0]
	for _, p := range e.peers {
		if expiry(&p.limit, p.st.A) > now {
			kept = append(kept, p)
		}
	}
	clear(e.peers[len(kept):])
	e.peers = kept
}

// size returns the number of keys held and the keys others told of that
// found no room.
func (t *table) size() (keys int, dropped uint64) {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.Lock()
		keys += len(sh.keys)
		dropped += sh.dropped
		sh.mu.Unlock()
	}
	return keys, dropped
}
