package memory

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	ctx = context.Background()
	t0  = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
)

// newTest returns a store that sweeps only when its fake clock is moved,
// closed when the test ends.
func newTest(t testing.TB, opts Options) *Store {
	t.Helper()
	if opts.Clock == nil {
		opts.Clock = clock.NewFake(t0)
	}
	s := New(opts)
	t.Cleanup(func() { s.Close() })
	return s
}

// has reports whether s holds key.
func (s *Store) has(k store.Key) bool {
	key := k.String()
	h := maphash.String(s.seed, key)
	sh := &s.shards[h&s.mask]
	sh.mu.Lock()
	defer sh.mu.Unlock()
	return sh.tab.find(h, key) >= 0
}

// listedKey is the raw key s, Listed: a key the store keeps room for.
func listedKey(s string) store.Key {
	return store.RawKey(s).Listed()
}

func mustDecide(t testing.TB, s *Store, key store.Key, l limiter.Limit, now time.Time) limiter.Decision {
	t.Helper()
	d, err := s.Decide(ctx, key, l, now, 1)
	if err != nil {
		t.Fatalf("Decide(%q): %v", key, err)
	}
	return d
}

func TestDecideKeepsStatePerKey(t *testing.T) {
	s := newTest(t, Options{})
	l := limiter.MustNew(limiter.FixedWindow, 2, time.Minute, 0)
	steps := []struct {
		key     store.Key
		at      time.Duration
		allowed bool
		remain  int64
	}{
		{store.RawKey("a"), 0, true, 1},
		{store.RawKey("b"), 0, true, 1},
		{store.RawKey("a"), time.Second, true, 0},
		{store.RawKey("a"), 2 * time.Second, false, 0},
		{store.RawKey("b"), 3 * time.Second, true, 0},
		{store.RawKey("a"), time.Hour, true, 1}, // a new window
	}
	for i, st := range steps {
		d := mustDecide(t, s, st.key, l, t0.Add(st.at))
		if d.Allowed != st.allowed || d.Remaining != st.remain {
			t.Errorf("step %d (%s at %v): allowed %v remaining %d, want %v %d",
				i, st.key, st.at, d.Allowed, d.Remaining, st.allowed, st.remain)
		}
	}
	if n := s.Len(); n != 2 {
		t.Errorf("Len() = %d, want 2", n)
	}
}

func TestFreshDecisionsAreNotStored(t *testing.T) {
	s := newTest(t, Options{})
	l := limiter.MustNew(limiter.GCRA, 10, time.Second, 0)
	if _, err := s.Decide(ctx, store.RawKey("look"), l, t0, 0); err != nil {
		t.Fatal(err)
	}
	if d, err := s.Decide(ctx, store.RawKey("too-big"), l, t0, 11); err != nil || d.Allowed {
		t.Fatalf("cost above burst: %+v, %v", d, err)
	}
	if n := s.Len(); n != 0 {
		t.Errorf("Len() = %d after a look and a denied request, want 0", n)
	}
}

func TestKeyIsCopiedOnce(t *testing.T) {
	s := newTest(t, Options{})
	l := limiter.MustNew(limiter.SlidingLog, 100, time.Minute, 0)
	stored := ""
	for i := range 3 {
		key := string([]byte("caller-buffer")) // a new string each time
		mustDecide(t, s, store.RawKey(key), l, t0.Add(time.Duration(i)*time.Second))
		sh := &s.shards[maphash.String(s.seed, key)&s.mask]
		e := sh.tab.at(sh.tab.find(maphash.String(s.seed, key), key))
		if unsafe.StringData(e.key()) == unsafe.StringData(key) {
			t.Fatalf("decision %d: the store kept the caller's string", i)
		}
		if i > 0 && unsafe.StringData(e.key()) != unsafe.StringData(stored) {
			t.Fatalf("decision %d: the stored key changed", i)
		}
		stored = e.key()
		for k := range sh.logs {
			if unsafe.StringData(k) != unsafe.StringData(stored) {
				t.Fatalf("decision %d: the log is kept under another copy of the key", i)
			}
		}
	}
}

// A new key that finds no room is counted on its rule's overflow counter:
// limited jointly with the others that found none, never waved through,
// and never at the cost of a key being limited.
func TestNoRoomCountsOnTheOverflowCounter(t *testing.T) {
	s := newTest(t, Options{MaxKeys: 4, Shards: 1})
	l := limiter.MustNew(limiter.FixedWindow, 2, time.Hour, 0)
	key := func(rule, caller string) store.Key { return store.GroupKey(store.Parts("header", caller), rule, "") }
	for i := range 4 {
		for range 2 { // remaining 0: limited
			mustDecide(t, s, key("tenants", fmt.Sprint("k", i)), l, t0)
		}
	}
	if _, err := s.Decide(ctx, key("tenants", "new"), l, t0, 0); err != nil {
		t.Errorf("zero-cost look: %v", err)
	}
	// new-1, new-2 and new-3 share one counter of 2: the third is denied.
	for i, want := range []bool{true, true, false} {
		if d := mustDecide(t, s, key("tenants", fmt.Sprint("new-", i)), l, t0); d.Allowed != want {
			t.Errorf("new-%d: allowed %v, want %v (%+v)", i, d.Allowed, want, d)
		}
	}
	// Another rule, or another limit, has a counter of its own.
	if d := mustDecide(t, s, key("claims", "new-0"), l, t0); !d.Allowed {
		t.Errorf("another rule's overflow counter was spent: %+v", d)
	}
	other := limiter.MustNew(limiter.FixedWindow, 3, time.Hour, 0)
	if d := mustDecide(t, s, key("tenants", "new-0"), other, t0); !d.Allowed {
		t.Errorf("another limit's overflow counter was spent: %+v", d)
	}
	for i := range 4 {
		if d := mustDecide(t, s, key("tenants", fmt.Sprint("k", i)), l, t0); d.Allowed {
			t.Errorf("k%d was forgotten: allowed again", i)
		}
	}
	later := t0.Add(time.Hour) // every window has ended: all expired
	if d := mustDecide(t, s, key("tenants", "new-0"), l, later); !d.Allowed {
		t.Errorf("after the windows ended the new key was denied: %+v", d)
	}
	if !s.has(key("tenants", "new-0")) {
		t.Errorf("after expired keys made room, the new key has no counter of its own")
	}
}

// Listed keys always have room: in a store full of limited keys they
// get counters of their own, which no flood evicts, and they take no room
// from other keys.
func TestReservedKeysAlwaysHaveRoom(t *testing.T) {
	s := newTest(t, Options{MaxKeys: 8, Shards: 1})
	l := limiter.MustNew(limiter.FixedWindow, 3, time.Hour, 0)
	mustDecide(t, s, listedKey("partner-b"), l, t0) // spends 1 before the flood
	for i := range 100 {
		for range 3 {
			mustDecide(t, s, store.RawKey(fmt.Sprint("flood-", i)), l, t0)
		}
	}
	for key, want := range map[string]int{"partner-a": 3, "partner-b": 2} {
		passed := 0
		for range 4 {
			if mustDecide(t, s, listedKey(key), l, t0).Allowed {
				passed++
			}
		}
		if passed != want {
			t.Errorf("%s passed %d of 4 at 3/h, want %d", key, passed, want)
		}
	}
	if n := s.Len(); n != 8+2+1 { // 8 flood keys, 2 partners, 1 overflow counter
		t.Errorf("Len() = %d, want 11", n)
	}
}

func TestOverflowKeyIsNoOtherKey(t *testing.T) {
	overflowKey := func(key store.Key, l limiter.Limit) string { return string(appendOverflowKey(nil, key.Rule(), l)) }
	l := limiter.MustNew(limiter.GCRA, 10, time.Minute, 5)
	keys := map[store.Key]string{}
	for _, k := range []store.Key{
		store.NewKey("claims", "a"), store.NewKey("claims", "b"), store.GroupKey(store.Parts("ip", "1"), "claims", "x"),
		store.NewKey("tenants"), store.RawKey("not-a-store-key"), store.RawKey(""), store.RawKey("3:ab"), store.RawKey("99:x"),
	} {
		o := overflowKey(k, l)
		if o[0] != '#' {
			t.Errorf("overflowKey(%q) = %q: does not start with '#'", k, o)
		}
		keys[k] = o
	}
	if keys[store.NewKey("claims", "a")] != keys[store.NewKey("claims", "b")] ||
		keys[store.NewKey("claims", "a")] != keys[store.GroupKey(store.Parts("ip", "1"), "claims", "x")] {
		t.Errorf("one rule's keys have different overflow counters: %q", keys)
	}
	if keys[store.NewKey("claims", "a")] == keys[store.NewKey("tenants")] {
		t.Errorf("two rules share an overflow counter: %q", keys)
	}
	if overflowKey(store.RawKey("x"), l) == overflowKey(store.RawKey("x"), limiter.MustNew(limiter.GCRA, 10, time.Minute, 6)) {
		t.Errorf("two limits share an overflow counter")
	}
}

func TestEvictsLeastRecentlyUsedFirst(t *testing.T) {
	s := newTest(t, Options{MaxKeys: 16, Shards: 1})
	l := limiter.MustNew(limiter.TokenBucket, 10, time.Minute, 0)
	key := func(i int) store.Key { return store.RawKey(fmt.Sprint("k", i)) }
	for i := range 16 {
		mustDecide(t, s, key(i), l, t0)
	}
	for i := range 4 { // k0 to k3 are now the most recently used
		mustDecide(t, s, key(i), l, t0)
	}
	// Each full insert evicts 16/8 = 2 keys, the oldest: k4 k5, then k6 k7.
	for i := 16; i < 19; i++ {
		mustDecide(t, s, key(i), l, t0)
	}
	for i := range 19 {
		want := i < 4 || i >= 8
		if held := s.has(key(i)); held != want {
			t.Errorf("k%d: held %v, want %v", i, held, want)
		}
	}
}

func TestLimitedKeySurvivesFlood(t *testing.T) {
	s := newTest(t, Options{MaxKeys: 1000})
	strict := limiter.MustNew(limiter.FixedWindow, 2, time.Hour, 0)
	loose := limiter.MustNew(limiter.FixedWindow, 1_000_000, time.Hour, 0)
	for range 3 {
		mustDecide(t, s, store.RawKey("abuser"), strict, t0)
	}
	used := int64(0)
	for i := range 100_000 {
		mustDecide(t, s, store.RawKey("flood-"+strconv.Itoa(i)), loose, t0)
		if i%100 == 0 {
			mustDecide(t, s, store.RawKey("regular"), loose, t0)
			used++
		}
		if i%10_000 == 0 && s.Len() > 1000 {
			t.Fatalf("Len() = %d, above MaxKeys", s.Len())
		}
	}
	if d := mustDecide(t, s, store.RawKey("abuser"), strict, t0); d.Allowed {
		t.Errorf("the limited key was evicted by the flood: %+v", d)
	}
	if d := mustDecide(t, s, store.RawKey("regular"), loose, t0); d.Remaining != loose.Rate()-used-1 {
		t.Errorf("the recently used key lost its count: remaining %d, want %d",
			d.Remaining, loose.Rate()-used-1)
	}
	if s.has(store.RawKey("flood-0")) {
		t.Errorf("the oldest idle key survived the flood")
	}
}

func TestSweepRemovesExpiredKeys(t *testing.T) {
	fake := clock.NewFake(t0)
	swept := make(chan struct{}, 1)
	s := newStore(Options{Clock: fake, SweepInterval: 10 * time.Second, Shards: 4},
		func() { swept <- struct{}{} })
	defer s.Close()
	short := limiter.MustNew(limiter.GCRA, 10, time.Second, 0) // reset 100ms
	long := limiter.MustNew(limiter.GCRA, 10, time.Hour, 0)    // reset 6m
	for i := range 3000 {
		mustDecide(t, s, store.RawKey(fmt.Sprint("short-", i)), short, t0)
	}
	for i := range 10 {
		mustDecide(t, s, store.RawKey(fmt.Sprint("long-", i)), long, t0)
	}
	steps := []struct {
		advance time.Duration
		want    int
	}{
		{10 * time.Second, 10}, // the short keys have expired
		{5 * time.Minute, 10},  // t0+5m10s: the long ones have not
		{time.Minute, 0},       // t0+6m10s: now they have
	}
	for _, st := range steps {
		fake.Advance(st.advance)
		select {
		case <-swept:
		case <-time.After(10 * time.Second): // a hang guard, not a timing assertion
			t.Fatal("no sweep after the clock passed a tick")
		}
		if n := s.Len(); n != st.want {
			t.Errorf("at %v: Len() = %d, want %d", fake.Now().Sub(t0), n, st.want)
		}
	}
}

func TestClose(t *testing.T) {
	s := New(Options{})
	l := limiter.MustNew(limiter.GCRA, 10, time.Second, 0)
	mustDecide(t, s, store.RawKey("k"), l, t0)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Decide(ctx, store.RawKey("k"), l, t0, 1); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Decide after Close: %v, want ErrClosed", err)
	}
	res, err := s.DecideEach(ctx, nil, []store.Request{{Key: store.RawKey("k"), Limit: l, Cost: 1}}, t0)
	if !errors.Is(err, store.ErrClosed) || len(res) != 0 {
		t.Errorf("DecideEach after Close: %v, %v, want ErrClosed", res, err)
	}
	if n := s.Len(); n != 0 {
		t.Errorf("Len() after Close = %d", n)
	}
	goleak.VerifyNone(t)
}

func TestDecideEach(t *testing.T) {
	s := newTest(t, Options{MaxKeys: 1, Shards: 1})
	l := limiter.MustNew(limiter.FixedWindow, 1, time.Minute, 0)
	res, err := s.DecideEach(ctx, nil, []store.Request{
		{Key: store.RawKey("a"), Limit: l, Cost: 1},
		{Key: store.RawKey("a"), Limit: l, Cost: 1},
		{Key: store.RawKey("b"), Limit: l, Cost: 1}, // "a" is limited and fills the store: the overflow counter
		{Key: store.RawKey("c"), Limit: l, Cost: 1}, // the overflow counter is spent
	}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 || !res[0].Decision.Allowed || res[1].Decision.Allowed || !res[2].Decision.Allowed ||
		res[3].Decision.Allowed {
		t.Errorf("DecideEach = %+v, want allowed, denied, allowed, denied", res)
	}
	for i, r := range res {
		if r.Err != nil {
			t.Errorf("result %d: %v", i, r.Err)
		}
	}
}

func TestOptionsDefaults(t *testing.T) {
	cases := []struct {
		opts            Options
		maxKeys, shards int
	}{
		{Options{}, DefaultMaxKeys, max(64, 1<<bits.Len(uint(4*runtime.GOMAXPROCS(0)-1)))},
		{Options{MaxKeys: 10}, 10, 8},
		{Options{MaxKeys: 1, Shards: 4}, 1, 1},
		{Options{MaxKeys: 100, Shards: 3}, 100, 4},
		{Options{MaxKeys: -1, Shards: 1 << 20}, DefaultMaxKeys, 1 << 16},
	}
	for _, c := range cases {
		s := newTest(t, c.opts)
		total := 0
		for i := range s.shards {
			total += s.shards[i].max
		}
		if len(s.shards) != c.shards || total != c.maxKeys {
			t.Errorf("%+v: %d shards holding %d keys, want %d holding %d",
				c.opts, len(s.shards), total, c.shards, c.maxKeys)
		}
	}
}
