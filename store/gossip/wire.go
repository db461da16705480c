package gossip

import (
	"encoding/binary"
	"errors"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// The messages instances exchange, each a kind byte and uvarint-framed
// fields:
//
//	counts: 1, name, incarnation, round, since, n, n × (key, algorithm, rate, period µs, state A, state B)
//	ack:    2, name, incarnation, incarnation acknowledged, round
//
// name is the sender's member name, incarnation the random number it drew
// at start (a restarted instance is another incarnation, whose counts start
// afresh and do not replace its former self's). A counts message of round
// carries every key changed since round since, which the receiver had
// acknowledged: a receiver holds every count its sender had at round once
// it has applied it. An ack tells the sender that it has.
const (
	kindCounts = 1
	kindAck    = 2
)

// maxKeyLen bounds a key in a message (keys are short: a rule and who it
// counts).
const maxKeyLen = 1 << 16

var errMalformed = errors.New("gossip store: malformed message")

// countsHeader is the head of a counts message.
type countsHeader struct {
	name        string
	incarnation uint64
	round       uint64
	since       uint64
}

// record is one key of a counts message.
type record struct {
	key   string
	limit limiter.Limit
	st    limiter.State
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendCountsHeader(b []byte, h countsHeader, n int) []byte {
	b = append(b, kindCounts)
	b = appendString(b, h.name)
	b = binary.AppendUvarint(b, h.incarnation)
	b = binary.AppendUvarint(b, h.round)
	b = binary.AppendUvarint(b, h.since)
	return binary.AppendUvarint(b, uint64(n))
}

func appendRecord(b []byte, key string, l *limiter.Limit, st limiter.State) []byte {
	b = appendString(b, key)
	b = append(b, byte(l.Algorithm()))
	b = binary.AppendUvarint(b, uint64(l.Rate()))
	b = binary.AppendUvarint(b, uint64(l.Period()/time.Microsecond))
	b = binary.AppendVarint(b, st.A)
	return binary.AppendVarint(b, st.B)
}

func appendAck(b []byte, name string, incarnation, of, round uint64) []byte {
	b = append(b, kindAck)
	b = appendString(b, name)
	b = binary.AppendUvarint(b, incarnation)
	b = binary.AppendUvarint(b, of)
	return binary.AppendUvarint(b, round)
}

// reader reads a message's fields, remembering the first failure.
type reader struct {
	b   []byte
	bad bool
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) byte() byte {
	if len(r.b) == 0 {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) string() string {
	n := r.uvarint()
	if n > maxKeyLen || n > uint64(len(r.b)) {
		r.bad, r.b = true, nil
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// readCounts decodes a counts message after its kind byte, calling each
// with every record whose limit is valid and of an algorithm the store
// supports (others are skipped: an instance of another version may count
// more). It fails on a message that is cut short or malformed, having
// called each with the records before the fault.
func readCounts(b []byte, each func(record)) (countsHeader, error) {
	r := reader{b: b}
	h := countsHeader{name: r.string(), incarnation: r.uvarint(), round: r.uvarint(), since: r.uvarint()}
	n := r.uvarint()
	if r.bad {
		return h, errMalformed
	}
	for range n {
		key, alg, rate, period := r.string(), limiter.Algorithm(r.byte()), r.uvarint(), r.uvarint()
		st := limiter.State{A: r.varint(), B: r.varint()}
		if r.bad {
			return h, errMalformed
		}
		if !Supported(alg) || rate > limiter.MaxRate || period > uint64(limiter.MaxPeriod/time.Microsecond) {
			continue
		}
		l, err := limiter.New(alg, int64(rate), time.Duration(period)*time.Microsecond, 0)
		if err != nil || !validState(&l, st) {
			continue
		}
		each(record{key: key, limit: l, st: st})
	}
	if len(r.b) != 0 {
		return h, errMalformed
	}
	return h, nil
}

// ack is a decoded ack message.
type ack struct {
	name        string
	incarnation uint64 // the acknowledging instance's
	of          uint64 // the incarnation whose round it acknowledges
	round       uint64
}

// readAck decodes an ack message after its kind byte.
func readAck(b []byte) (ack, error) {
	r := reader{b: b}
	a := ack{name: r.string(), incarnation: r.uvarint(), of: r.uvarint(), round: r.uvarint()}
	if r.bad || len(r.b) != 0 {
		return ack{}, errMalformed
	}
	return a, nil
}

// Bounds of a record's state. A count beyond maxCount (more than any rate,
// limiter.MaxRate) or a window starting beyond maxStart (µs since the
// epoch: the year 146,000) is no instance's: the counts of 2^31 instances
// then add up, and a window's expiry (two periods on) is reached, without
// overflowing. Without these bounds one message counting 2^63 − 1 turned
// the fleet's sum negative and admitted everything.
const (
	maxCount = 1<<32 - 1
	maxStart = 1 << 62
)

// validState reports whether st, written under l, is a state an instance
// writes: a window start from 0 to maxStart and counts from 0 to maxCount
// (a sliding_window state holds two counts of 32 bits in B).
func validState(l *limiter.Limit, st limiter.State) bool {
	if st.A < 0 || st.A > maxStart || st.B < 0 {
		return false
	}
	return l.Algorithm() == limiter.SlidingWindow || st.B <= maxCount
}
