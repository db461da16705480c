package memory

import (
	"slices"
	"sync/atomic"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// logBound counts the sliding_log entries the store holds, across every
// shard, against Options.MaxLogEntries.
type logBound struct {
	max  int64
	used atomic.Int64
}

// fits reports whether n more entries stay within the bound.
func (b *logBound) fits(n int64) bool { return b.used.Load()+n <= b.max }

// decideLog is Store.Decide for the key of entry e under a sliding_log
// limit, with the shard locked. An admission that would add an entry
// beyond Options.MaxLogEntries (a guest's: MaxGuestLogEntries) is not made
// for a key that is not reserved:
// decideLog returns errNoRoom, the key's log as it was, and the request
// goes to the overflow counter. A denial needs no room and is the key's.
func (sh *shardState) decideLog(e *entry, l limiter.Limit, now time.Time, cost int64) (limiter.Decision, error) {
	old := sh.logs[e.key()]
	st := limiter.State{A: e.a, B: e.b, Log: old} // A holds the log's total cost
	short := e.use&reservedBit == 0 && cost > 0 && !sh.boundOf(e.use).fits(1)
	if short {
		st.Log = slices.Clone(old) // an admission rewrites the log in place: keep old until it fits
	}
	d := l.Apply(&st, now, cost)
	if short && len(st.Log) > len(old) {
		return limiter.Decision{}, errNoRoom
	}
	sh.record(e, d.Allowed && d.Remaining > 0, expirySecond(now, d.Reset), st.A, st.B)
	sh.setLog(e, st.Log, len(old))
	return d, nil
}

// makeLogRoom frees log entries for a sliding_log decision at now of a
// key of class (guestBit, or 0) when the store holds the most entries its
// bound allows: it drops the shard's expired keys, then evicts the least
// recently used eighth of its keys of the class that have a log: of the
// main room's, those neither limited nor reserved; of the guests', any
// (evictGuests). Entries held in other shards are theirs to free. A shard
// that found nothing to free tries again only a second later, so that a
// store full of limited logs costs each decision no walk over the shard.
func (sh *shardState) makeLogRoom(now time.Time, class uint32) {
	sec := nowSecond(now)
	bound, tried := sh.bound, &sh.logTried
	if class == guestBit {
		bound, tried = sh.guestBound, &sh.guestLogTried
	}
	if bound.fits(1) || *tried == sec {
		return
	}
	sh.dropExpired(sec, sh.tab.end(), 0)
	if bound.fits(1) {
		return
	}
	if class == guestBit {
		if !sh.evictGuests(true) {
			*tried = sec
		}
		return
	}
	evictable := func(e *entry) bool {
		return e.inUse() && e.use&(limitedBit|classBits) == 0 && len(sh.logs[e.key()]) > 0
	}
	ages := make([]uint32, 0, len(sh.logs))
	for i := range sh.tab.end() {
		if e := sh.tab.at(i); evictable(e) {
			ages = append(ages, sh.age(e))
		}
	}
	if len(ages) == 0 {
		*tried = sec
		return
	}
	oldest := kthLargest(ages, max(1, len(ages)/8))
	for i := sh.tab.end() - 1; i >= 0; i-- {
		if e := sh.tab.at(i); evictable(e) && sh.age(e) >= oldest {
			sh.removeAt(i)
		}
	}
}
