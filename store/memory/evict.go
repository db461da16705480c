package memory

import (
	"math"
	"time"
)

// sweepBatch is how many positions the sweeper looks at per lock of a shard,
// so that deciders on that shard never wait long behind it.
const sweepBatch = 1024

// makeRoom frees at least one place in a full shard for a new key of the
// main room at now: first by dropping the entries that have expired, then
// by evicting the least recently used of the main room's keys that are not
// being limited, about an eighth of them in one pass so that the cost of
// the pass (a walk over the shard) is spread over the many new keys that
// fill the room it makes. It reports false, evicting nothing, when every
// key that takes room is being limited; a shard in that state is walked
// again only a second later, so that a flood of new keys into a store full
// of limited keys costs each key no walk over its shard
// (BenchmarkDecideFullStore).
func (sh *shardState) makeRoom(now time.Time) bool {
	sec := nowSecond(now)
	if sh.roomTried == sec {
		return false
	}
	sh.dropExpired(sec, sh.tab.end(), 0)
	main := sh.tab.n - sh.reserved - sh.guests
	if main < sh.max {
		return true
	}
	ages := make([]uint32, 0, main)
	for i := range sh.tab.end() {
		if e := sh.tab.at(i); e.inUse() && e.use&(limitedBit|classBits) == 0 {
			ages = append(ages, sh.age(e))
		}
	}
	if len(ages) == 0 {
		sh.roomTried = sec
		return false
	}
	oldest := kthLargest(ages, max(1, len(ages)/8))
	for i := sh.tab.end() - 1; i >= 0; i-- {
		if e := sh.tab.at(i); e.inUse() && e.use&(limitedBit|classBits) == 0 && sh.age(e) >= oldest {
			sh.removeAt(i)
		}
	}
	return true
}

// makeGuestRoom frees at least one place in the shard's full guests' room
// for a new guest at now: it drops the expired entries, and if that frees
// none, evicts an eighth of the guests (evictGuests). Unlike the main
// room's, it always makes room: a guest's count may be forgotten, its
// request never refused for want of room.
func (sh *shardState) makeGuestRoom(now time.Time) {
	sh.dropExpired(nowSecond(now), sh.tab.end(), 0)
	if sh.guests >= sh.guestMax {
		sh.evictGuests(false)
	}
}

// evictGuests evicts about an eighth of the shard's guests (with logs
// only: of those that have a log), the least recently used first and those
// not being limited before those that are, and reports whether it evicted
// any. A caller makes guests as it likes, so a guest over its limit is no
// more the policy's than any other: being limited keeps it only longer
// than the guests that are not.
func (sh *shardState) evictGuests(logs bool) bool {
	pick := func(e *entry) bool {
		return e.inUse() && e.use&guestBit != 0 && (!logs || len(sh.logs[e.key()]) > 0)
	}
	ranks := make([]uint32, 0, sh.guests)
	for i := range sh.tab.end() {
		if e := sh.tab.at(i); pick(e) {
			ranks = append(ranks, sh.guestRank(e))
		}
	}
	if len(ranks) == 0 {
		return false
	}
	first := kthLargest(ranks, max(1, len(ranks)/8))
	for i := sh.tab.end() - 1; i >= 0; i-- {
		if e := sh.tab.at(i); pick(e) && sh.guestRank(e) >= first {
			sh.removeAt(i)
		}
	}
	return true
}

// guestRank orders the guests for eviction, the first to go highest: its
// age (below 2^29), raised above every limited guest's when it is not
// being limited.
func (sh *shardState) guestRank(e *entry) uint32 {
	r := sh.age(e)
	if e.use&limitedBit == 0 {
		r |= 1 << 30
	}
	return r
}

// dropExpired removes the entries among positions [lo, hi) that have
// expired at second now (an entry expires at its expiry second), walking
// from the last to the first.
func (sh *shardState) dropExpired(now uint32, hi, lo int) {
	for i := min(hi, sh.tab.end()) - 1; i >= lo; i-- {
		if e := sh.tab.at(i); e.inUse() && e.expiry <= now {
			sh.removeAt(i)
		}
	}
}

// sweep removes the shard's expired entries at second now, looking at
// sweepBatch positions per lock. Entries that move while the lock is
// released may be missed until the next sweep; none is removed before it
// expires. It also caps the age of old entries (see maxAge) and gives back
// memory that removals freed.
func (sh *shardState) sweep(now uint32) {
	for hi := math.MaxInt; hi > 0; {
		sh.mu.Lock()
		if sh.closed {
			sh.mu.Unlock()
			return
		}
		hi = min(hi, sh.tab.end())
		lo := max(hi-sweepBatch, 0)
		sh.dropExpired(now, hi, lo)
		sh.capAges(min(hi, sh.tab.end()), lo)
		if lo == 0 {
			sh.tab.shrink()
		}
		sh.mu.Unlock()
		hi = lo
	}
}

// capAges makes entries in [lo, hi) older than maxAge ticks exactly maxAge
// old, keeping their order among younger entries.
func (sh *shardState) capAges(hi, lo int) {
	for i := lo; i < hi; i++ {
		if e := sh.tab.at(i); e.inUse() && sh.age(e) > maxAge {
			e.use = (sh.tick-maxAge)&tickMask<<flagBits | e.use&flagMask
		}
	}
}

// kthLargest returns the k-th largest value of a (1 <= k <= len(a)),
// reordering a. It is quickselect: linear time on average.
func kthLargest(a []uint32, k int) uint32 {
	lo, hi, want := 0, len(a)-1, k-1
	for lo < hi {
		pivot := a[lo+(hi-lo)/2]
		i, j := lo, hi
		for i <= j {
			for a[i] > pivot {
				i++
			}
			for a[j] < pivot {
				j--
			}
			if i <= j {
				a[i], a[j] = a[j], a[i]
				i++
				j--
			}
		}
		switch {
		case want <= j:
			hi = j
		case want >= i:
			lo = i
		default:
			return a[want]
		}
	}
	return a[want]
}
