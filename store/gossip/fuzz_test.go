package gossip

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// minRecord is the fewest bytes a record of a counts message takes: a
// one-byte key length and five one-byte fields.
const minRecord = 6

// FuzzReadMessage decodes any bytes as a counts and as an ack message:
// no panic, no more records than the bytes can hold, keys no longer than
// the bytes, and every record one the store can add up (a limit it keeps,
// counts that cannot overflow). Re-encoding what was decoded decodes to
// the same.
func FuzzReadMessage(f *testing.F) {
	l := limiter.MustNew(limiter.SlidingWindow, 100, time.Minute, 0)
	msg := appendCountsHeader(nil, countsHeader{name: "i0", incarnation: 7, round: 3, since: 1}, 2)
	msg = appendRecord(msg, "k", &l, limiter.State{A: 60_000_000, B: 3<<32 | 4})
	fw := limiter.MustNew(limiter.FixedWindow, 10, time.Second, 0)
	msg = appendRecord(msg, "1:rule\x00caller", &fw, limiter.State{A: 1_000_000, B: 9})
	f.Add(msg[1:])
	f.Add(appendAck(nil, "i1", 8, 7, 3)[1:])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var recs []record
		keyBytes := 0
		h, err := readCounts(b, func(r record) {
			recs = append(recs, r)
			keyBytes += len(r.key)
			if !Supported(r.limit.Algorithm()) {
				t.Fatalf("record of a limit the store does not keep: %v", r.limit)
			}
			if !addable(&r.limit, r.st) {
				t.Fatalf("record %q: state %+v under %v, which the store cannot add up", r.key, r.st, r.limit)
			}
		})
		if len(recs)*minRecord > len(b) || keyBytes > len(b) || len(h.name) > len(b) {
			t.Fatalf("%d records, %d key bytes, name of %d from %d bytes", len(recs), keyBytes, len(h.name), len(b))
		}
		if err == nil {
			again := appendCountsHeader(nil, h, len(recs))
			for _, r := range recs {
				again = appendRecord(again, r.key, &r.limit, r.st)
			}
			var recs2 []record
			h2, err := readCounts(again[1:], func(r record) { recs2 = append(recs2, r) })
			if err != nil || h2 != h || !sameRecords(recs, recs2) {
				t.Fatalf("re-encoded: %+v %v %v, want %+v %v", h2, recs2, err, h, recs)
			}
		}
		if a, err := readAck(b); err == nil {
			if a2, err := readAck(appendAck(nil, a.name, a.incarnation, a.of, a.round)[1:]); err != nil || a2 != a {
				t.Fatalf("ack re-encoded: %+v %v, want %+v", a2, err, a)
			}
		}
	})
}

// FuzzWireRoundTrip encodes a message as an instance would and decodes it:
// the same header and record, or, for a state the store never writes, the
// record skipped and the rest of the message read.
func FuzzWireRoundTrip(f *testing.F) {
	f.Add("i0", uint64(1), uint64(2), uint64(0), "k", uint8(limiter.FixedWindow), uint64(10), uint64(1_000_000), int64(1_000_000), int64(3))
	f.Add("i0", uint64(1), uint64(2), uint64(1), "k", uint8(limiter.SlidingWindow), uint64(10), uint64(60_000_000), int64(60_000_000), int64(2<<32|5))
	f.Fuzz(func(t *testing.T, name string, inc, round, since uint64, key string, alg uint8, rate, period uint64, a, b int64) {
		if len(key) > maxKeyLen || len(name) > maxKeyLen || rate > limiter.MaxRate || period > uint64(limiter.MaxPeriod/time.Microsecond) {
			return // never written: see Store.decide and New
		}
		l, err := limiter.New(limiter.Algorithm(alg), int64(rate), time.Duration(period)*time.Microsecond, 0)
		if err != nil || !Supported(l.Algorithm()) {
			return // a limit the store refuses to decide on
		}
		h := countsHeader{name: name, incarnation: inc, round: round, since: since}
		st := limiter.State{A: a, B: b}
		msg := appendCountsHeader(nil, h, 2)
		msg = appendRecord(msg, key, &l, st)
		msg = appendRecord(msg, "next", &l, limiter.State{})
		var got []record
		h2, err := readCounts(msg[1:], func(r record) { got = append(got, r) })
		if err != nil || h2 != h {
			t.Fatalf("header %+v, %v; want %+v", h2, err, h)
		}
		want := []record{{key: key, limit: l, st: st}, {key: "next", limit: l}}
		if !validState(&l, st) {
			want = want[1:]
		}
		if !sameRecords(got, want) {
			t.Fatalf("records %+v, want %+v", got, want)
		}
		gotAck, err := readAck(appendAck(nil, name, inc, since, round)[1:])
		if err != nil || gotAck != (ack{name: name, incarnation: inc, of: since, round: round}) {
			t.Fatalf("ack %+v, %v", gotAck, err)
		}
	})
}

func sameRecords(a, b []record) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].key != b[i].key || a[i].st.A != b[i].st.A || a[i].st.B != b[i].st.B || !a[i].limit.Same(&b[i].limit) {
			return false
		}
	}
	return true
}

// addable reports whether the counts of st, written under l, add up over
// 2^31 instances without overflow, and its window's expiry (two periods
// on) too.
func addable(l *limiter.Limit, st limiter.State) bool {
	if st.A < 0 || st.A > 1<<62 || st.B < 0 {
		return false
	}
	return l.Algorithm() == limiter.SlidingWindow || st.B < 1<<32 // each of sliding_window's two counts has 32 bits
}

// TestHostileCount: a message counting more than any instance can (2^63 −
// 1 in the current window) is skipped, not added to the fleet's sum, which
// it turned negative, admitting everything.
func TestHostileCount(t *testing.T) {
	s := start(t, "a", Options{})
	l := limiter.MustNew(limiter.FixedWindow, 10, time.Hour, 0)
	now := time.Now().Truncate(time.Hour).Add(time.Minute)
	if n := admit(t, s, store.RawKey("k"), l, now, 100); n != 10 {
		t.Fatalf("admitted %d, want 10", n)
	}
	msg := appendCountsHeader(nil, countsHeader{name: "x", incarnation: 1, round: 1}, 1)
	msg = appendRecord(msg, "k", &l, limiter.State{A: now.Truncate(time.Hour).UnixMicro(), B: 1<<63 - 1})
	delegate{s}.NotifyMsg(msg)
	if d, err := s.Decide(t.Context(), store.RawKey("k"), l, now, 1); err != nil || d.Allowed {
		t.Errorf("after a count of 2^63 − 1: %+v, %v; want denied", d, err)
	}
}

// TestLongKey: a key longer than a message may carry (a caller's header
// value of 70 KB) is decided on its rule's overflow counter, so that the
// messages carrying the other keys still reach the others.
func TestLongKey(t *testing.T) {
	ss := fleet(t, 2, Options{})
	l := limiter.MustNew(limiter.FixedWindow, 10, time.Hour, 0)
	now := time.Now()
	long := store.NewKey("r", strings.Repeat("x", 70_000))
	if n := admit(t, ss[0], long, l, now, 3); n != 3 {
		t.Fatalf("admitted %d of the long key, want 3", n)
	}
	admit(t, ss[0], store.NewKey("r", "short"), l, now, 4)
	eventually(t, "the other instance hears both", func() bool {
		return remaining(t, ss[1], store.NewKey("r", "short"), l, now) == 6 && remaining(t, ss[1], store.RawKey(overflowKey(long.Rule(), l)), l, now) == 7
	})
	if _, err := New(Options{Bind: "127.0.0.1:0", Name: strings.Repeat("n", maxKeyLen+1)}); err == nil {
		t.Error("a name longer than a message carries was accepted")
	}
}
