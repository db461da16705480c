package memory

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// logEntries counts the entries of every log the store holds, and checks
// that the bound's count agrees.
func logEntries(t *testing.T, s *Store) int64 {
	t.Helper()
	n := int64(0)
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		for _, log := range sh.logs {
			n += int64(len(log))
		}
		sh.mu.Unlock()
	}
	if used := s.bound.used.Load(); used != n {
		t.Fatalf("the bound counts %d entries, the logs hold %d", used, n)
	}
	return n
}

// MaxLogEntries bounds the sliding_log entries of all keys together. Keys
// that would need more are limited jointly on their overflow counter, not
// waved through; reserved keys keep their whole log.
func TestLogEntriesAreBounded(t *testing.T) {
	s := newTest(t, Options{MaxLogEntries: 100})
	l := limiter.MustNew(limiter.SlidingLog, 10, time.Hour, 0)
	admitted := 0
	for i := range 50 {
		for j := range 11 { // 10 admitted, then limited: never evicted
			at := t0.Add(time.Duration(i*11+j) * time.Microsecond) // one entry each
			if mustDecide(t, s, store.RawKey(fmt.Sprint("caller-", i)), l, at).Allowed {
				admitted++
			}
		}
	}
	// 10 callers fill the bound; the other 40 share one overflow counter of 10.
	if admitted != 100+10 {
		t.Errorf("admitted %d requests, want 110 (100 entries, then an overflow counter of 10)", admitted)
	}
	if n := logEntries(t, s); n != 110 {
		t.Errorf("the logs hold %d entries, want 110 (the bound and the overflow counter's log)", n)
	}
	at := t0.Add(time.Second)
	for i := range 11 {
		if d := mustDecide(t, s, listedKey("partner-a"), l, at.Add(time.Duration(i)*time.Microsecond)); d.Allowed != (i < 10) {
			t.Errorf("partner-a's request %d: allowed %v", i, d.Allowed)
		}
	}
	if n := logEntries(t, s); n != 120 {
		t.Errorf("the logs hold %d entries, want 120 (with partner-a's 10)", n)
	}
}

// Keys with a log that are not being limited make room for new ones, least
// recently used first, and expired logs give their entries back.
func TestLogRoomFromIdleAndExpiredKeys(t *testing.T) {
	fake := clock.NewFake(t0)
	swept := make(chan struct{}, 1)
	s := newStore(Options{MaxLogEntries: 64, Shards: 1, Clock: fake}, func() { swept <- struct{}{} })
	defer s.Close()
	l := limiter.MustNew(limiter.SlidingLog, 10, time.Minute, 0)
	for i := range 1000 { // one request each: not limited, so evictable
		if d := mustDecide(t, s, store.RawKey(fmt.Sprint("k", i)), l, t0.Add(time.Duration(i)*time.Microsecond)); !d.Allowed {
			t.Fatalf("k%d denied: %+v", i, d)
		}
		if n := logEntries(t, s); n > 64 {
			t.Fatalf("after k%d the logs hold %d entries, more than 64", i, n)
		}
	}
	if !s.has(store.RawKey("k999")) || s.has(store.RawKey("k0")) {
		t.Errorf("the newest key has no log of its own, or the oldest kept its log")
	}
	fake.Advance(time.Minute + DefaultSweepInterval)
	select {
	case <-swept:
	case <-time.After(10 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("no sweep")
	}
	if n := logEntries(t, s); n != 0 {
		t.Errorf("after every log expired the logs hold %d entries", n)
	}
}
