package live

import "time"

// Times inside package live are Unix nanoseconds (int64): small to keep
// and cheap to compare on every request.

// historySeconds is HistoryLength in seconds: the length of a rule's ring
// of per-second totals, and of the gateway's samples.
const historySeconds = int(HistoryLength / time.Second)

// second is what a rule decided in one second.
type second struct {
	sec              int64 // Unix seconds; buckets of other seconds are stale
	allowed, limited uint32
}

// secondRing is a rule's totals for the last historySeconds seconds.
type secondRing [historySeconds]second

// add counts one request decided at t.
func (r *secondRing) add(t int64, limited bool) {
	sec := t / int64(time.Second)
	b := &r[sec%int64(historySeconds)]
	if b.sec != sec {
		*b = second{sec: sec}
	}
	if limited {
		b.limited++
	} else {
		b.allowed++
	}
}

// at returns the totals of second sec (zero if it has been overwritten).
func (r *secondRing) at(sec int64) (allowed, limited uint32) {
	if sec < 0 {
		return 0, 0
	}
	b := &r[sec%int64(historySeconds)]
	if b.sec != sec {
		return 0, 0
	}
	return b.allowed, b.limited
}

// lastMinute sums the totals of the 60 seconds up to and including now's.
func (r *secondRing) lastMinute(now int64) (allowed, limited uint64) {
	sec := now / int64(time.Second)
	for s := sec - 59; s <= sec; s++ {
		a, l := r.at(s)
		allowed, limited = allowed+uint64(a), limited+uint64(l)
	}
	return allowed, limited
}

// minuteBuckets of minuteWidth make an entry's last minute.
const (
	minuteBuckets = 12
	minuteWidth   = int64(5 * time.Second)
)

type minuteBucket struct {
	slot             int64
	allowed, limited uint32
}

// minuteRing is one counter's requests over about the last minute, in
// five-second buckets.
type minuteRing [minuteBuckets]minuteBucket

func (r *minuteRing) add(t int64, limited bool) {
	slot := t / minuteWidth
	b := &r[slot%minuteBuckets]
	if b.slot != slot {
		*b = minuteBucket{slot: slot}
	}
	if limited {
		b.limited++
	} else {
		b.allowed++
	}
}

// sum returns the requests of the buckets within the minute up to now.
func (r *minuteRing) sum(now int64) (allowed, limited uint64) {
	slot := now / minuteWidth
	for i := range r {
		if b := &r[i]; b.slot > slot-minuteBuckets && b.slot <= slot {
			allowed, limited = allowed+uint64(b.allowed), limited+uint64(b.limited)
		}
	}
	return allowed, limited
}

// What a periodRing counts.
const (
	early   = iota // requests sent before the Retry-After their caller was given
	refused        // requests answered 429 by the rule
	patient        // distinct windows in which a caller that had waited as told was refused
	numCounts
)

// periodBuckets of a tenth of the period make the findings' sliding
// period: a count leaves it at most a tenth of the period late.
const periodBuckets = 10

type periodBucket struct {
	slot        int64
	first, last int64 // times of the first and last event counted
	n           [numCounts]uint32
}

// periodRing counts events over the sliding period; width is the period
// over periodBuckets, passed in (it is the same for every ring of a
// Live).
type periodRing [periodBuckets]periodBucket

func (r *periodRing) add(t, width int64, what int) {
	slot := t / width
	b := &r[slot%periodBuckets]
	if b.slot != slot || b.first == 0 {
		*b = periodBucket{slot: slot, first: t}
	}
	b.n[what]++
	b.last = t
}

// periodSum is what a periodRing counted over the period.
type periodSum struct {
	n           [numCounts]uint64
	first, last int64 // 0 when nothing was counted
}

func (r *periodRing) sum(now, width int64) periodSum {
	slot := now / width
	var s periodSum
	for i := range r {
		b := &r[i]
		if b.first == 0 || b.slot <= slot-periodBuckets || b.slot > slot {
			continue
		}
		for k := range b.n {
			s.n[k] += uint64(b.n[k])
		}
		if s.first == 0 || b.first < s.first {
			s.first = b.first
		}
		s.last = max(s.last, b.last)
	}
	return s
}
