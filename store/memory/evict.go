package memory

import (
	"math"
	"time"
)

// sweepBatch is how many positions the sweeper looks at per lock of a shard,
// so that deciders on that shard never wait long behind it.
const sweepBatch = 1024

// makeRoom frees at least one place in a full shard for a new key at now:
// first by dropping the entries that have expired, then by evicting the
// least recently used of the keys that are not being limited, about an
// eighth of them in one pass so that the cost of the pass (a walk over the
// shard) is spread over the many new keys that fill the room it makes. It
// reports false, evicting nothing, when every key that takes room is being
// limited; a shard in that state is walked again only a second later, so
// that a flood of new keys into a store full of limited keys costs each
// key no walk over its shard (BenchmarkDecideFullStore).
func (sh *shardState) makeRoom(now time.Time) bool {
	sec := nowSecond(now)
	if sh.roomTried == sec {
		return false
	}
	sh.dropExpired(sec, sh.tab.end(), 0)
	if sh.tab.n-sh.reserved < sh.max {
		return true
	}
	ages := make([]uint32, 0, sh.tab.n-sh.reserved)
	for i := range sh.tab.end() {
		if e := sh.tab.at(i); e.inUse() && e.use&(limitedBit|reservedBit) == 0 {
			ages = append(ages, sh.age(e))
		}
	}
	if len(ages) == 0 {
		sh.roomTried = sec
		return false
	}
	oldest := kthLargest(ages, max(1, len(ages)/8))
	for i := sh.tab.end() - 1; i >= 0; i-- {
		if e := sh.tab.at(i); e.inUse() && e.use&(limitedBit|reservedBit) == 0 && sh.age(e) >= oldest {
			sh.removeAt(i)
		}
	}
	return true
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
