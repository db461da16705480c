package memory

import (
	"fmt"
	"testing"
	"time"
	"unsafe"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// TestEntrySize: an entry, with the limit its state was written under, is
// 40 bytes, so that an idle key costs about 49 bytes besides its own
// (BenchmarkIdleKeyMemory).
func TestEntrySize(t *testing.T) {
	if size := unsafe.Sizeof(entry{}); size != 40 {
		t.Errorf("an entry is %d bytes, want 40", size)
	}
}

// limitRefs returns how many limits the shards' tables hold and how many
// entries they count as holding them.
func limitRefs(s *Store) (held, refs int) {
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		held += len(sh.limits.index)
		for _, slot := range sh.limits.all {
			refs += slot.refs
		}
		sh.mu.Unlock()
	}
	return held, refs
}

// TestLimitsFollowTheKeys: every stored key counts once on the limit its
// state is under, in its shard's table, through new keys, changes of
// limit, evictions and sweeps; a limit no key holds any more is forgotten,
// so that limits a reload retired (or one per caller, computed) do not
// pile up.
func TestLimitsFollowTheKeys(t *testing.T) {
	fake := clock.NewFake(t0)
	swept := make(chan struct{}, 1)
	s := newStore(Options{MaxKeys: 256, Shards: 4, Clock: fake}, func() { swept <- struct{}{} })
	defer s.Close()
	perKey := func(i int) limiter.Limit { return limiter.MustNew(limiter.GCRA, int64(1+i%50), time.Minute, 0) }
	check := func(when string) {
		t.Helper()
		held, refs := limitRefs(s)
		if n := s.Len(); refs != n || held > n {
			t.Fatalf("%s: %d keys, but the limit tables count %d holders of %d limits", when, n, refs, held)
		}
	}
	for i := range 1000 { // more keys than fit: evictions
		mustDecide(t, s, store.RawKey(fmt.Sprint("k", i)), perKey(i), t0)
	}
	check("after 1000 new keys")
	for i := range 1000 { // each key that is still stored moves to another limit
		mustDecide(t, s, store.RawKey(fmt.Sprint("k", i)), perKey(i+7), t0.Add(time.Second))
	}
	check("after changes of limit")
	if held, _ := limitRefs(s); held == 0 {
		t.Fatal("no limit held")
	}
	fake.Advance(time.Hour)
	select {
	case <-swept:
	case <-time.After(10 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("no sweep")
	}
	if held, refs := limitRefs(s); s.Len() != 0 || held != 0 || refs != 0 {
		t.Errorf("after every key expired: %d keys, %d limits held by %d", s.Len(), held, refs)
	}
}
