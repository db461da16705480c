package gossip

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/storetest"
)

// TestDecideAllConformance runs the DecideAll tables of the window
// algorithms on one instance, which has no peer and so decides exactly as
// the reference store.
func TestDecideAllConformance(t *testing.T) {
	storetest.RunDecideAllSupported(t, func(t *testing.T) store.Store { return start(t, "alone", Options{}) }, Supported)
}

// decideAll is s's DecideAll, which must not fail.
func decideAll(t testing.TB, s *Store, now time.Time, reqs ...store.Request) []store.Result {
	t.Helper()
	res, err := s.DecideAll(context.Background(), nil, reqs, now)
	if err != nil || len(res) != len(reqs) {
		t.Fatalf("DecideAll: %d results for %d requests, %v", len(res), len(reqs), err)
	}
	return res
}

// allowed reports whether every result of res is an allowed decision.
func allowed(res []store.Result) bool {
	for _, r := range res {
		if r.Err != nil || !r.Decision.Allowed {
			return false
		}
	}
	return true
}

// TestDecideAllNoPartialSpend: goroutines asking two rules at once, in
// either order, on an instance whose counts are being sent to a peer meanwhile:
// every call spends both rules or neither, so both count exactly the calls
// allowed; and once one rule is full, the other's count stays where it is.
func TestDecideAllNoPartialSpend(t *testing.T) {
	ss := fleet(t, 2, Options{MaxUnsynced: 1 << 30})
	s := ss[0]
	wide, narrow := limiter.MustNew(limiter.FixedWindow, 1000, time.Hour, 0), limiter.MustNew(limiter.SlidingWindow, 5, time.Hour, 0)
	const pairs = 512
	now := time.Now().Truncate(time.Hour).Add(time.Minute)
	var mu sync.Mutex
	admitted := map[string]int64{}
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			for i := range 3 * pairs {
				pair := strconv.Itoa(i % pairs)
				a := store.Request{Key: store.NewKey("a", pair), Limit: wide, Cost: 1}
				b := store.Request{Key: store.NewKey("b", pair), Limit: narrow, Cost: 1}
				reqs := []store.Request{a, b}
				if g%2 == 1 { // the other order: the shards are still locked in one
					reqs = []store.Request{b, a}
				}
				res, err := s.DecideAll(context.Background(), nil, reqs, now)
				if err != nil {
					t.Error(err)
					return
				}
				if allowed(res) {
					mu.Lock()
					admitted[pair]++
					mu.Unlock()
				}
			}
		}()
	}
	close(gate)
	wg.Wait()
	for i := range pairs {
		pair := strconv.Itoa(i)
		if n := admitted[pair]; n != 5 {
			t.Errorf("pair %s: %d calls admitted, want 5 (the narrow rule's limit)", pair, n)
		}
		if got, want := remaining(t, s, store.NewKey("a", pair), wide, now), 1000-admitted[pair]; got != want {
			t.Errorf("pair %s: the wide rule has %d left, want %d: %d admitted calls, each spending once", pair, got, want, admitted[pair])
		}
		if got := remaining(t, s, store.NewKey("b", pair), narrow, now); got != 0 {
			t.Errorf("pair %s: the narrow rule has %d left, want 0", pair, got)
		}
	}
}

// TestDecideAllBound: three instances deciding two rules of each request
// at once, round robin, admit no more than the tighter rule's limit and
// 2 × max_unsynced, and every admitted request counts on both rules, also
// on the instances that did not admit it.
func TestDecideAllBound(t *testing.T) {
	const maxUnsynced = 5
	ss := fleet(t, 3, Options{MaxUnsynced: maxUnsynced})
	a, b := limiter.MustNew(limiter.FixedWindow, 100, time.Hour, 0), limiter.MustNew(limiter.SlidingWindow, 60, time.Hour, 0)
	reqs := []store.Request{{Key: store.RawKey("a"), Limit: a, Cost: 1}, {Key: store.RawKey("b"), Limit: b, Cost: 1}}
	now := time.Now().Truncate(time.Hour).Add(time.Minute) // one window throughout
	bound := int64(60 + (len(ss)-1)*maxUnsynced)
	admitted := int64(0)
	ask := func(i int) []store.Result {
		res := decideAll(t, ss[i%len(ss)], now, reqs...)
		if allowed(res) {
			admitted++
		}
		if admitted > bound {
			t.Fatalf("request %d: %d admitted, more than limit 60 + 2 × max_unsynced %d", i, admitted, maxUnsynced)
		}
		return res
	}
	for i := range 1000 { // the burst, faster than any exchange
		ask(i)
	}
	t.Logf("%d of a burst of 1000 admitted at once", admitted)
	eventually(t, "every instance denies for the limit", func() bool {
		full := 0
		for i := range ss {
			if d := ask(i)[1].Decision; !d.Allowed && d.RetryAfter > time.Minute {
				full++
			}
		}
		return full == len(ss)
	})
	if admitted < 60 {
		t.Errorf("%d admitted, less than the limit 60", admitted)
	}
	for _, s := range ss {
		eventually(t, s.name+" counts every admitted request on both rules", func() bool {
			return remaining(t, s, store.RawKey("a"), a, now) == 100-admitted && remaining(t, s, store.RawKey("b"), b, now) == 0
		})
	}
	t.Logf("%d admitted in all (limit 60, bound %d)", admitted, bound)
}

// TestDecideAllWaitSpendsNothing: a request that one rule's max_unsynced
// sends to wait for the next exchange is denied with RetryAfter the
// interval, and spends nothing of its other rule.
func TestDecideAllWaitSpendsNothing(t *testing.T) {
	// No exchange during the test: each knows the other, has heard none of
	// its counts, and so admits max_unsynced a key.
	ss := []*Store{start(t, "a", Options{MaxUnsynced: 3, Interval: time.Hour})}
	ss = append(ss, start(t, "b", Options{MaxUnsynced: 3, Interval: time.Hour, Join: []string{ss[0].Addr()}}))
	eventually(t, "a knows b", func() bool { return len(ss[0].Members()) == 2 && !ss[0].view.Load().alone })
	l := limiter.MustNew(limiter.FixedWindow, 100, time.Hour, 0)
	now := time.Now()
	busy, other := store.Request{Key: store.RawKey("busy"), Limit: l, Cost: 1}, store.Request{Key: store.RawKey("other"), Limit: l, Cost: 1}
	for range 3 {
		decideAll(t, ss[0], now, busy)
	}
	res := decideAll(t, ss[0], now, other, busy)
	if d := res[1].Decision; d.Allowed || d.RetryAfter != time.Hour || d.Remaining != 97 {
		t.Errorf("busy: %+v, want denied, RetryAfter the interval, 97 remaining", d)
	}
	if d := res[0].Decision; !d.Allowed || d.Remaining != 100 {
		t.Errorf("other: %+v, want a look: allowed, 100 remaining", d)
	}
	if got := remaining(t, ss[0], store.RawKey("other"), l, now); got != 100 {
		t.Errorf("other has %d left, want 100: the denied request spent it", got)
	}
	if n := ss[0].Stats().Unsynced; n != 1 {
		t.Errorf("Stats().Unsynced = %d, want 1", n)
	}
}

// TestDecideAllOverflow: a new key that finds no room, and one too long
// for a message, are decided on their rule's overflow counter, as Decide
// decides them, within the call: Shared, and spent only if every request
// of the call is allowed.
func TestDecideAllOverflow(t *testing.T) {
	s := start(t, "a", Options{MaxKeys: shards}) // one key a shard
	fill, one := limiter.MustNew(limiter.FixedWindow, 10, time.Hour, 0), limiter.MustNew(limiter.FixedWindow, 1, time.Hour, 0)
	now := time.Now()
	for i := range 10_000 { // every shard full
		if _, err := s.Decide(context.Background(), store.NewKey("fill", strconv.Itoa(i)), fill, now, 1); err != nil {
			t.Fatal(err)
		}
	}
	held := store.NewKey("fill", "0") // the first: it found room
	long := store.NewKey("r", strings.Repeat("x", maxKeyLen))
	res := decideAll(t, s, now, store.Request{Key: long, Limit: one, Cost: 1}, store.Request{Key: held, Limit: fill, Cost: 9})
	if !allowed(res) || !res[0].Shared || res[1].Shared {
		t.Fatalf("a long key of r and a held key: %+v, want both allowed, the first Shared", res)
	}
	// r's overflow counter is full: a new key of r is denied there, and
	// the held key's request spends nothing.
	res = decideAll(t, s, now, store.Request{Key: store.NewKey("r", "new"), Limit: one, Cost: 1}, store.Request{Key: store.NewKey("fill", "0"), Limit: fill, Cost: 0})
	if res[0].Decision.Allowed || !res[0].Shared {
		t.Errorf("a new key of r: %+v, want denied on the overflow counter (Shared)", res[0])
	}
	// Another rule's overflow counter has room: denied by the held key
	// (no room left), its look at the counter finds it unspent.
	res = decideAll(t, s, now, store.Request{Key: store.NewKey("q", "new"), Limit: one, Cost: 1}, store.Request{Key: held, Limit: fill, Cost: 1})
	if d := res[0].Decision; !d.Allowed || d.Remaining != 1 || !res[0].Shared || res[1].Decision.Allowed {
		t.Errorf("a new key of q and the full held key: %+v, want a look at q's overflow counter (1 left) and a denial", res)
	}
	if d, _ := s.Decide(context.Background(), store.NewKey("q", "other"), one, now, 1); !d.Allowed {
		t.Errorf("q's overflow counter: %+v, want allowed: the refused call spent it", d)
	}
}

// TestDecideAllRoomInOneCall: new keys of one call that land in one shard
// take its room one at a time: the shard holds no more than MaxKeys allows,
// the others going to their rule's overflow counter.
func TestDecideAllRoomInOneCall(t *testing.T) {
	s := start(t, "a", Options{MaxKeys: shards}) // one key a shard
	l := limiter.MustNew(limiter.FixedWindow, 10, time.Hour, 0)
	reqs := make([]store.Request, 500)
	for i := range reqs {
		reqs[i] = store.Request{Key: store.NewKey("r", strconv.Itoa(i)), Limit: l, Cost: 1}
	}
	res := decideAll(t, s, time.Now(), reqs...)
	shared := 0
	for _, r := range res {
		if r.Shared {
			shared++
		}
	}
	if k := s.Stats().Keys; k > shards+1 {
		t.Errorf("%d keys held, want at most %d and the overflow counter", k, shards)
	}
	if shared < len(reqs)-shards {
		t.Errorf("%d requests on the overflow counter, want at least %d", shared, len(reqs)-shards)
	}
}

// TestDecideAllRoomAfterExpired: a held key whose counts have expired,
// dropped to make room for a new key after it in the same call, is a new
// key too: the two do not both take the one place of their shard.
func TestDecideAllRoomAfterExpired(t *testing.T) {
	s := start(t, "a", Options{MaxKeys: shards}) // one key a shard
	l := limiter.MustNew(limiter.FixedWindow, 10, time.Second, 0)
	old := store.NewKey("r", "old")
	var fresh store.Key
	for i := 0; fresh == (store.Key{}); i++ {
		if k := store.NewKey("r", strconv.Itoa(i)); s.tab.index(k.String()) == s.tab.index(old.String()) {
			fresh = k
		}
	}
	now := time.Now()
	decideAll(t, s, now, store.Request{Key: old, Limit: l, Cost: 1})
	now = now.Add(time.Minute) // old's counts have expired
	res := decideAll(t, s, now, store.Request{Key: old, Limit: l, Cost: 1}, store.Request{Key: fresh, Limit: l, Cost: 1})
	if !allowed(res) || res[0].Shared || !res[1].Shared {
		t.Errorf("%+v, want both allowed, the second on the overflow counter", res)
	}
	if sh := &s.tab.shards[s.tab.index(old.String())]; sh.keys[old.String()] == nil || sh.keys[fresh.String()] != nil {
		t.Errorf("the shard holds old: %v, the new key: %v; want old only", sh.keys[old.String()] != nil, sh.keys[fresh.String()] != nil)
	}
}

// TestDecideAllClosed: a closed store refuses DecideAll, and so does one
// closed by a Close that began after the call read the closed flag: its
// admission would never reach the others.
func TestDecideAllClosed(t *testing.T) {
	l := limiter.MustNew(limiter.FixedWindow, 100, time.Hour, 0)
	now := time.Now()
	reqs := []store.Request{{Key: store.RawKey("a"), Limit: l, Cost: 1}, {Key: store.RawKey("b"), Limit: l, Cost: 1}}
	s := start(t, "a", Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	dst := make([]store.Result, 1, 4)
	if res, err := s.DecideAll(context.Background(), dst, reqs, now); !errors.Is(err, store.ErrClosed) || len(res) != 1 {
		t.Errorf("DecideAll after Close: %d results, %v; want dst as it was and store.ErrClosed", len(res), err)
	}

	s = start(t, "b", Options{})
	passed, resume := make(chan struct{}), make(chan struct{})
	s.afterClosedCheck = func() { close(passed); <-resume }
	type result struct {
		res []store.Result
		err error
	}
	decided := make(chan result, 1)
	go func() {
		res, err := s.DecideAll(context.Background(), dst, reqs, now)
		decided <- result{res, err}
	}()
	<-passed
	if err := s.Close(); err != nil { // alone: nothing to wait for
		t.Fatal(err)
	}
	close(resume)
	if r := <-decided; !errors.Is(r.err, store.ErrClosed) || len(r.res) != 1 {
		t.Errorf("DecideAll under way at Close: %+v, %v; want dst as it was and store.ErrClosed", r.res, r.err)
	}
}

// TestDecideAllUnsupported: a request under an algorithm the store does
// not keep answers an error and stops no other.
func TestDecideAllUnsupported(t *testing.T) {
	s := start(t, "a", Options{})
	l := limiter.MustNew(limiter.FixedWindow, 10, time.Hour, 0)
	now := time.Now()
	res := decideAll(t, s, now, store.Request{Key: store.RawKey("a"), Limit: l, Cost: 1},
		store.Request{Key: store.RawKey("t"), Limit: limiter.MustNew(limiter.TokenBucket, 10, time.Second, 10), Cost: 1})
	if res[1].Err == nil || !strings.Contains(res[1].Err.Error(), SupportedNames) {
		t.Errorf("token_bucket: %v, want an error naming %s", res[1].Err, SupportedNames)
	}
	if !res[0].Decision.Allowed || remaining(t, s, store.RawKey("a"), l, now) != 9 {
		t.Errorf("the window rule: %+v, want allowed and spent", res[0])
	}
}

// BenchmarkDecideAll decides two rules of one request at once, against
// two Decides of one rule each, on one instance alone and on one with a
// peer (max_unsynced out of reach):
//
//	go test -run '^$' -bench 'DecideAll|TwoDecides' -benchmem ./store/gossip/
func BenchmarkDecideAll(b *testing.B) {
	benchFleets(b, func(b *testing.B, s *Store, reqs []store.Request, now time.Time) {
		dst := make([]store.Result, 0, len(reqs))
		for b.Loop() {
			var err error
			if dst, err = s.DecideAll(context.Background(), dst[:0], reqs, now); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkTwoDecides is BenchmarkDecideAll's two rules decided one by one.
func BenchmarkTwoDecides(b *testing.B) {
	benchFleets(b, func(b *testing.B, s *Store, reqs []store.Request, now time.Time) {
		for b.Loop() {
			for _, r := range reqs {
				if _, err := s.Decide(context.Background(), r.Key, r.Limit, now, r.Cost); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// benchFleets runs run on an instance alone and on one of two, with two
// rules of a limit no benchmark reaches, on keys already held.
func benchFleets(b *testing.B, run func(b *testing.B, s *Store, reqs []store.Request, now time.Time)) {
	l := limiter.MustNew(limiter.SlidingWindow, 1_000_000_000, time.Hour, 0)
	reqs := []store.Request{{Key: store.NewKey("ip", "192.0.2.1"), Limit: l, Cost: 1}, {Key: store.NewKey("client", "c1"), Limit: l, Cost: 1}}
	for _, n := range []int{1, 2} {
		b.Run(strconv.Itoa(n)+"_instances", func(b *testing.B) {
			s := start(b, "alone", Options{})
			if n > 1 {
				s = fleet(b, n, Options{MaxUnsynced: 1 << 40})[0]
			}
			now := time.Now()
			decideAll(b, s, now, reqs...)
			b.ReportAllocs()
			run(b, s, reqs, now)
		})
	}
}

// FuzzDecideAllAlone decides any sequence of DecideAll calls (up to three
// requests each, on three keys, under window limits that change between
// calls and within one; a zero limit and negative costs too, on a key of
// their own) on an instance alone and on the reference store: the same
// decisions, as an instance with no peer decides exactly as limiter. The
// clock only goes on: an instance keeps no state of a look, so that, the
// clock gone back, it reads a window that a look since has left, where
// limiter reads the newer one (Decide as well).
func FuzzDecideAllAlone(f *testing.F) {
	f.Add([]byte{0x12, 0x05, 0x31, 0x21, 0x40, 0x06, 0x7f, 0x10, 0x83})
	f.Add([]byte{0x00, 0x11, 0x11, 0x11, 0x02, 0x91, 0xa2, 0x33, 0x20})
	// A key spent under 3/min, looked at under 4/10s in the same call and
	// 14s later: the call keeps the key read under 4/10s, as its last
	// request left it.
	f.Add([]byte("2X1180000"))
	s := start(f, "alone", Options{})
	limits := []limiter.Limit{
		limiter.MustNew(limiter.FixedWindow, 3, time.Minute, 0),
		limiter.MustNew(limiter.FixedWindow, 1, time.Minute, 0),
		limiter.MustNew(limiter.SlidingWindow, 5, time.Minute, 0),
		limiter.MustNew(limiter.SlidingWindow, 2, 10*time.Second, 0),
		limiter.MustNew(limiter.FixedWindow, 4, 10*time.Second, 0),
		{},
	}
	base := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	var run int
	f.Fuzz(func(t *testing.T, b []byte) {
		run++
		ref := storetest.NewReference()
		now := base.Add(time.Duration(run) * time.Hour) // keys of their own: fresh
		prefix := strconv.Itoa(run)
		for len(b) > 0 {
			// A call: its time step and request count, then a byte a request
			// (key, limit, cost, shadow).
			now = now.Add(time.Duration(b[0]>>2) * time.Second)
			n := 1 + int(b[0]&3)%3
			b = b[1:]
			var reqs []store.Request
			for ; n > 0 && len(b) > 0; n, b = n-1, b[1:] {
				c := b[0]
				r := store.Request{Key: store.NewKey(prefix, strconv.Itoa(int(c&3)%3)),
					Limit: limits[int(c>>2&7)%len(limits)], Cost: int64(c>>5&3) - 1, Shadow: c&0x80 != 0}
				if r.Limit.IsZero() || r.Cost < 0 {
					// A key of its own: such a request leaves its key as
					// it is, as Decide does (and the Redis store), where
					// the reference store keeps it read under that limit.
					r.Key = store.NewKey(prefix, "denied")
				}
				reqs = append(reqs, r)
			}
			got, err := s.DecideAll(context.Background(), nil, reqs, now)
			want, _ := ref.DecideAll(context.Background(), nil, reqs, now)
			if err != nil || len(got) != len(want) {
				t.Fatalf("DecideAll(%+v): %d results, %v", reqs, len(got), err)
			}
			for i := range got {
				if got[i].Err != nil || got[i].Decision != want[i].Decision {
					t.Fatalf("at %v, request %d of %+v: %v (%v), the reference store's %v", now, i, reqs, got[i].Decision, got[i].Err, want[i].Decision)
				}
			}
		}
	})
}
