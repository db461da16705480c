package redis

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// TestExpiry checks that a key expires at its Reset (with Redis TIME), has
// no TTL with caller time, and that a denied request changes neither the
// state nor the expiry.
func TestExpiry(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, false)
	for _, alg := range limiter.Algorithms {
		l := mustLimit(t, alg, 1, time.Hour, 0)
		key := "expiry:" + alg.String()
		d := decide(t, s, store.RawKey(key), l, epoch, 1)
		rk := redisKey(s.prefix, store.RawKey(key))
		pttl, err := do(t, s, s.client.B().Pttl().Key(rk).Build()).AsInt64()
		if err != nil {
			t.Fatal(err)
		}
		ceilMS := (d.Reset + time.Millisecond - 1).Milliseconds()
		if pttl > ceilMS || pttl < ceilMS-1000 {
			t.Errorf("%v: PTTL %dms after a decision with Reset %v", alg, pttl, d.Reset)
		}
		before, ttlBefore := dump(t, s, rk)
		if d := decide(t, s, store.RawKey(key), l, epoch, 1); d.Allowed {
			t.Fatalf("%v: second request at 1 per hour allowed: %+v", alg, d)
		}
		// The TTL, in whole seconds, may tick down one meanwhile.
		if after, ttlAfter := dump(t, s, rk); after != before || ttlAfter > ttlBefore || ttlAfter < ttlBefore-1 {
			t.Errorf("%v: a denied request changed the key from %s ttl %ds to %s ttl %ds", alg, before, ttlBefore, after, ttlAfter)
		}
	}
	c := open(t, []string{srv.Addr}, true)
	decide(t, c, store.RawKey("caller"), mustLimit(t, limiter.GCRA, 1, time.Hour, 0), epoch, 1)
	if pttl, _ := do(t, c, c.client.B().Pttl().Key(redisKey(c.prefix, store.RawKey("caller"))).Build()).AsInt64(); pttl != -1 {
		t.Errorf("with CallerTime a key has PTTL %d, want -1 (none)", pttl)
	}
}

// dump describes a key's type and value, and returns its TTL in seconds,
// to compare before and after.
func dump(t *testing.T, s *Store, rk string) (string, int64) {
	t.Helper()
	typ, _ := do(t, s, s.client.B().Type().Key(rk).Build()).ToString()
	var val any
	switch typ {
	case "list":
		val, _ = do(t, s, s.client.B().Lrange().Key(rk).Start(0).Stop(-1).Build()).AsStrSlice()
	case "string":
		v, _ := do(t, s, s.client.B().Get().Key(rk).Build()).ToString()
		val = fmt.Sprintf("%x", v)
	default:
		val, _ = do(t, s, s.client.B().Hgetall().Key(rk).Build()).AsStrMap()
	}
	ttl, _ := do(t, s, s.client.B().Ttl().Key(rk).Build()).AsInt64()
	return fmt.Sprintf("%s %v", typ, val), ttl
}

// TestFreshStateDeleted checks that a key whose state is back to a fresh
// one (Reset 0) is deleted rather than kept.
func TestFreshStateDeleted(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	for _, alg := range limiter.Algorithms {
		l := mustLimit(t, alg, 2, time.Second, 0)
		key := "fresh:" + alg.String()
		rk := redisKey(s.prefix, store.RawKey(key))
		decide(t, s, store.RawKey(key), l, epoch, 1)
		if n, _ := do(t, s, s.client.B().Exists().Key(rk).Build()).AsInt64(); n != 1 {
			t.Fatalf("%v: no key after an admitted request", alg)
		}
		d := decide(t, s, store.RawKey(key), l, epoch.Add(5*time.Second), 0)
		if d.Reset != 0 || !d.Allowed {
			t.Fatalf("%v: a look after 5 periods: %+v, want allowed with Reset 0", alg, d)
		}
		if n, _ := do(t, s, s.client.B().Exists().Key(rk).Build()).AsInt64(); n != 0 {
			kept, ttl := dump(t, s, rk)
			t.Errorf("%v: key kept (%s, ttl %ds) after Reset reached 0", alg, kept, ttl)
		}
	}
}

// TestCostEdges checks the costs Go decides without consulting the state or
// that would not fit a double: a negative cost and the zero Limit are
// denied without Redis, and the largest cost is denied with Never on a
// key that has spent something (in int64 count+cost would wrap around).
func TestCostEdges(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	for _, alg := range limiter.Algorithms {
		l := mustLimit(t, alg, 10, time.Second, 0)
		key := "edge:" + alg.String()
		decide(t, s, store.RawKey(key), l, epoch, 1)
		d := decide(t, s, store.RawKey(key), l, epoch, math.MaxInt64)
		if d.Allowed || d.RetryAfter != limiter.Never || d.Remaining != 9 {
			t.Errorf("%v: cost MaxInt64: %+v, want denied, Never, remaining 9", alg, d)
		}
		if d := decide(t, s, store.RawKey(key), l, epoch, -1); d != (limiter.Decision{Limit: 10, RetryAfter: limiter.Never}) {
			t.Errorf("%v: cost -1: %+v", alg, d)
		}
	}
	if d := decide(t, s, store.RawKey("zero"), limiter.Limit{}, epoch, 1); d != (limiter.Decision{RetryAfter: limiter.Never}) {
		t.Errorf("zero Limit: %+v", d)
	}
}

// TestAlgorithmChanged reuses a key under another algorithm, as a reloaded
// rule might: a key of the wrong type or layout is replaced, not an error.
func TestAlgorithmChanged(t *testing.T) {
	t.Parallel()
	srv := redistest.StartServer(t)
	s := open(t, []string{srv.Addr}, true)
	order := []limiter.Algorithm{limiter.SlidingLog, limiter.GCRA, limiter.SlidingLog, limiter.SlidingWindow, limiter.SlidingLog,
		limiter.GCRA, limiter.SlidingWindow, limiter.TokenBucket, limiter.FixedWindow, limiter.LeakyBucket, limiter.SlidingWindow}
	for i, alg := range order {
		l := mustLimit(t, alg, 3, time.Minute, 0)
		if d := decide(t, s, store.RawKey("changed"), l, epoch.Add(time.Duration(i)*time.Second), 1); !d.Allowed {
			t.Errorf("%v after another algorithm: %+v", alg, d)
		}
	}
}
