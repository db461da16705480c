package memory

import (
	"hash/maphash"
	"strconv"
	"time"
	"unsafe"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// decideOverflow decides a request whose key found no room on the key's
// overflow counter: one per rule and limit, shared by every key of that
// rule and limit that found no room, so that such keys are limited
// jointly rather than not at all. Overflow counters are reserved (they
// always have room and are never evicted): there is at most one per rule
// and limit, and a flood of distinct keys cannot make more.
func (s *Store) decideOverflow(rule string, limit limiter.Limit, now time.Time, cost int64) (d limiter.Decision, err error) {
	var buf [96]byte
	b := appendOverflowKey(buf[:0], rule, limit)
	// A view of buf, which nothing keeps: a new counter stores a copy
	// (table.insert), so that a flood of new keys allocates nothing here.
	key := unsafe.String(unsafe.SliceData(b), len(b))
	h := maphash.String(s.seed, key)
	sh := &s.shards[h&s.mask]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if sh.closed {
		return d, store.ErrClosed
	}
	i := sh.tab.find(h, key)
	switch {
	case i < 0:
		return sh.decideNew(h, key, limit, now, cost, reservedBit)
	case limit.Algorithm() == limiter.SlidingLog:
		return sh.decideLog(sh.tab.at(i), limit, now, cost) // reserved: never errNoRoom
	}
	return sh.apply(sh.tab.at(i), &limit, now, cost), nil
}

// appendOverflowKey appends to b the key of the overflow counter of rule
// under limit: '#' (no key made by store.NewKey or store.GroupKey starts
// so), the rule as store.Key writes a part (its length, ':', its bytes),
// then the limit's algorithm, rate, period in microseconds and burst, each
// after a ':'. A raw key (store.RawKey) has no rule, and shares one
// overflow counter per limit with such keys.
func appendOverflowKey(b []byte, rule string, limit limiter.Limit) []byte {
	b = append(b, '#')
	b = strconv.AppendInt(b, int64(len(rule)), 10)
	b = append(append(b, ':'), rule...)
	b = append(append(b, ':'), limit.Algorithm().String()...)
	for _, n := range [...]int64{limit.Rate(), int64(limit.Period() / time.Microsecond), limit.Burst()} {
		b = strconv.AppendInt(append(b, ':'), n, 10)
	}
	return b
}
