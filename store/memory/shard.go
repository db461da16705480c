package memory

import (
	"errors"
	"math"
	"sync"
	"time"
	"unsafe"

	"github.com/sluice-rl/sluice/limiter"
)

// The low bits of entry.use, below the tick.
const (
	limitedBit  = 1 // the key's last decision left it limited
	reservedBit = 2 // the key always has room (a Listed key, an overflow counter)
	guestBit    = 4 // the key is in the guests' room (Options.Guest)
	classBits   = reservedBit | guestBit
	flagBits    = 3
	flagMask    = 1<<flagBits - 1
	// maxAge bounds the age (in ticks) that the sweeper lets an entry
	// show, so that the 29-bit tick can wrap without making an old entry
	// look new.
	maxAge   = 1 << 28
	tickMask = 1<<29 - 1
)

// shardState is one shard: a mutex and the keys that hash to it.
type shardState struct {
	mu     sync.Mutex
	closed bool
	tick   uint32 // counts decisions, for least-recently-used order
	max    int    // most keys this shard may hold, reserved keys and guests aside
	// reserved counts the entries with reservedBit: they take no room
	// from the max.
	reserved int
	// guests counts the entries with guestBit, in a room of guestMax of
	// their own.
	guests, guestMax int
	tab              table
	// logs holds the entries of sliding_log keys, only while non-empty,
	// keyed by the entry's own copy of the key.
	logs map[string][]limiter.Entry
	// limits holds the limits the entries were written under.
	limits limits
	// bound counts the entries of every shard's logs (the store's), the
	// guests' aside: guestBound counts those.
	bound, guestBound *logBound
	// roomTried, logTried and guestLogTried are the seconds at which
	// makeRoom and makeLogRoom (for the main room, and for the guests')
	// last found nothing to free.
	roomTried, logTried, guestLogTried uint32
}

// shard pads shardState to a multiple of 128 bytes (two cache lines, as
// the adjacent-line prefetcher fetches them in pairs) so that goroutines
// working on neighbouring shards do not slow each other down.
type shard struct {
	shardState
	_ [128 - unsafe.Sizeof(shardState{})%128]byte
}

// errNoRoom is the answer of decideNew and decideLog for a key that finds
// no room (for itself, or for a sliding_log entry): the request is then
// decided on its overflow counter (overflow.go).
var errNoRoom = errors.New("memory store: no room")

// decideNew decides for a key the shard does not hold; class is the
// key's reservedBit or guestBit, or 0 for a key of the main room. A
// decision that leaves the state as good as fresh (Reset 0: a denied or
// zero-cost request) is not remembered, so it needs no room. A reserved
// key is stored without counting towards the shard's max; a guest takes
// room in the guests' room, which always makes it (makeGuestRoom); another
// key needs room in the main room, and without it decideNew returns
// errNoRoom, having changed nothing, as it does for a key that is not
// reserved and finds no room for its log.
func (sh *shardState) decideNew(h uint64, key string, l limiter.Limit, now time.Time, cost int64, class uint32) (limiter.Decision, error) {
	var next limiter.State
	d := l.Apply(&next, now, cost)
	if d.Reset == 0 {
		return d, nil
	}
	switch class {
	case guestBit:
		if sh.guests >= sh.guestMax {
			sh.makeGuestRoom(now)
		}
	case 0:
		if sh.tab.n-sh.reserved-sh.guests >= sh.max && !sh.makeRoom(now) {
			return limiter.Decision{}, errNoRoom
		}
	}
	if n := int64(len(next.Log)); class != reservedBit && n > 0 && !sh.boundOf(class).fits(n) {
		if sh.makeLogRoom(now, class); !sh.boundOf(class).fits(n) {
			return limiter.Decision{}, errNoRoom
		}
	}
	e := sh.tab.insert(h, key)
	e.limit = sh.limits.ref(&l)
	e.use = class
	switch class {
	case reservedBit:
		sh.reserved++
	case guestBit:
		sh.guests++
	}
	sh.record(e, d.Allowed && d.Remaining > 0, expirySecond(now, d.Reset), next.A, next.B)
	if len(next.Log) > 0 {
		sh.setLog(e, next.Log, 0)
	}
	return d, nil
}

// boundOf returns the bound on the logs of the keys of class (guestBit or
// not).
func (sh *shardState) boundOf(class uint32) *logBound {
	if class&guestBit != 0 {
		return sh.guestBound
	}
	return sh.bound
}

// reinterpret makes the state of e, written under another limit, the state
// of the same key under l (limiter.Reinterpret), and records l as its
// limit. The decision that follows keeps it whether it allows or not.
func (sh *shardState) reinterpret(e *entry, l limiter.Limit, now time.Time) {
	old := sh.logs[e.key()]
	st := limiter.Reinterpret(*sh.limits.at(e.limit), l, limiter.State{A: e.a, B: e.b, Log: old}, now)
	sh.limits.unref(e.limit)
	e.a, e.b, e.limit = st.A, st.B, sh.limits.ref(&l)
	sh.setLog(e, st.Log, len(old))
}

// apply decides a request of cost at now on e's state under l, which must
// be the limit e was written under, and records the result.
func (sh *shardState) apply(e *entry, l *limiter.Limit, now time.Time, cost int64) (d limiter.Decision) {
	st := limiter.State{A: e.a, B: e.b}
	l.ApplyInto(&st, now, cost, &d)
	sh.record(e, d.Allowed && d.Remaining > 0, expirySecond(now, d.Reset), st.A, st.B)
	return d
}

// record stores in e the state a, b that a decision left, whether the key
// may still pass (allowed with some remaining), and the second it expires
// (expirySecond of the decision's time and reset).
func (sh *shardState) record(e *entry, open bool, expiry uint32, a, b int64) {
	sh.tick = (sh.tick + 1) & tickMask
	use := sh.tick<<flagBits | e.use&classBits
	if !open {
		use |= limitedBit
	}
	e.a, e.b = a, b
	e.expiry = expiry
	e.use = use
}

// setLog keeps a sliding_log's entries under e's copy of its key, in
// place of a log of was entries, counting them in e's bound.
func (sh *shardState) setLog(e *entry, log []limiter.Entry, was int) {
	key := e.key()
	if d := len(log) - was; d != 0 {
		sh.boundOf(e.use).used.Add(int64(d))
	}
	if len(log) > 0 {
		if sh.logs == nil {
			sh.logs = make(map[string][]limiter.Entry)
		}
		sh.logs[key] = log
	} else if len(sh.logs) > 0 {
		delete(sh.logs, key)
	}
}

// removeAt forgets entry i and its log.
func (sh *shardState) removeAt(i int) {
	e := sh.tab.at(i)
	if len(sh.logs) > 0 {
		if log, ok := sh.logs[e.key()]; ok {
			sh.boundOf(e.use).used.Add(-int64(len(log)))
			delete(sh.logs, e.key())
		}
	}
	switch e.use & classBits {
	case reservedBit:
		sh.reserved--
	case guestBit:
		sh.guests--
	}
	sh.limits.unref(e.limit)
	sh.tab.remove(i)
}

// age returns how many ticks ago e was last used.
func (sh *shardState) age(e *entry) uint32 {
	return (sh.tick - e.use>>flagBits) & tickMask
}

// expirySecond returns the second, rounded up, at which a state whose reset
// is reset from now becomes as good as fresh. Seconds past 2106 saturate:
// such a key never expires.
func expirySecond(now time.Time, reset time.Duration) uint32 {
	return expiryMicros(limiter.UnixMicro(now), reset)
}

// expiryMicros is expirySecond for now as limiter.UnixMicro returns it.
func expiryMicros(us int64, reset time.Duration) uint32 {
	us += int64(max(reset, 0) / time.Microsecond)
	return uint32(min((us+999_999)/1_000_000, math.MaxUint32))
}

// nowSecond returns now in whole seconds since the Unix epoch, rounded
// down: an entry whose expiry is at most nowSecond(t) has expired at t.
func nowSecond(now time.Time) uint32 {
	return uint32(min(limiter.UnixMicro(now)/1_000_000, math.MaxUint32))
}
