package core

import (
	"context"
	"math/rand/v2"
	"runtime"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sethvargo/go-limiter/memorystore"
	"golang.org/x/time/rate"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
)

// Every benchmark keeps its requests allowed (a rate of 1e9 per second),
// so that all of them measure the common case, and reads the clock once
// per request as x/time/rate's Allow and go-limiter's Take do, unless its
// name says Fixed.

const (
	manyKeys = 100_000
	// noSweep keeps sluice's sweeper from removing keys in the middle of
	// a benchmark: their state expires a second after their last request.
	noSweep = time.Hour
)

var (
	ctx  = context.Background()
	fast = limiter.MustNew(limiter.GCRA, 1_000_000_000, time.Second, 0)
)

// keys returns n distinct keys shaped as sluice's gateway builds them.
func keys(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = store.NewKey("claims", "client-"+strconv.Itoa(i)).String()
	}
	return ks
}

// The benchmarks are in the order the go tool runs them, each next to the
// one it is compared with, so that both meet the same machine load.

// BenchmarkXTimeAllow is one golang.org/x/time/rate Limiter.
func BenchmarkXTimeAllow(b *testing.B) {
	l := rate.NewLimiter(1e9, 1e9)
	b.ReportAllocs()
	for b.Loop() {
		if !l.Allow() {
			b.Fatal("denied")
		}
	}
}

// BenchmarkSluiceHot is sluice's memory store on one key. Its loop calls
// Decide as BenchmarkXTimeAllow's calls Allow, directly: through
// benchKeys' closure and key cycling it would pay an indirect call that
// x/time's line does not.
func BenchmarkSluiceHot(b *testing.B) {
	s := newSluice(1)
	defer s.Close()
	key := store.RawKey(keys(1)[0])
	b.ReportAllocs()
	for b.Loop() {
		if d, err := s.Decide(ctx, key, fast, wall.Now(), 1); !d.Allowed || err != nil {
			b.Fatal("denied", err)
		}
	}
}

// BenchmarkSluiceParallel is sluice's memory store on one key from
// GOMAXPROCS goroutines (run with -cpu 2).
func BenchmarkSluiceParallel(b *testing.B) {
	s := newSluice(1)
	defer s.Close()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if d, err := s.Decide(ctx, store.RawKey("hot"), fast, wall.Now(), 1); !d.Allowed || err != nil {
				b.Error("denied", err)
				return
			}
		}
	})
}

// BenchmarkSluiceHotFixed is sluice's memory store on one key at a fixed
// time: its own cost, without the clock's.
func BenchmarkSluiceHotFixed(b *testing.B) {
	s := newSluice(1)
	defer s.Close()
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		if d, err := s.Decide(ctx, store.RawKey("hot"), fast, now, 1); !d.Allowed || err != nil {
			b.Fatal("denied", err)
		}
	}
}

// wall is the clock sluice's gateway reads once per request (clock.Real:
// monotonic time on a wall-clock base renewed every second).
var wall clock.Real

// BenchmarkClockReal is the clock read every sluice request pays: a part of
// BenchmarkSluiceHot.
func BenchmarkClockReal(b *testing.B) {
	var last time.Time
	for b.Loop() {
		last = wall.Now()
	}
	runtime.KeepAlive(last)
}

// BenchmarkTimeNow is the clock read x/time/rate's Allow pays: a part of
// BenchmarkXTimeAllow.
func BenchmarkTimeNow(b *testing.B) {
	var last time.Time
	for b.Loop() {
		last = time.Now()
	}
	runtime.KeepAlive(last)
}

// BenchmarkLimiterDecide is sluice's algorithm alone, limiter.Decide on a
// state held in a local variable: the part of BenchmarkSluiceHotFixed that
// is not the store's.
func BenchmarkLimiterDecide(b *testing.B) {
	var s limiter.State
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		var d limiter.Decision
		if d, s = limiter.Decide(fast, s, now, 1); !d.Allowed {
			b.Fatal("denied")
		}
	}
}

// BenchmarkGoLimiter1 is github.com/sethvargo/go-limiter's memorystore
// Take on one key.
func BenchmarkGoLimiter1(b *testing.B) { benchGoLimiter(b, 1) }

// BenchmarkGoLimiter100k is go-limiter's memorystore Take over 100k
// pre-filled keys.
func BenchmarkGoLimiter100k(b *testing.B) { benchGoLimiter(b, manyKeys) }

// BenchmarkSluice100k is sluice's memory store over 100k pre-filled keys.
func BenchmarkSluice100k(b *testing.B) {
	s := newSluice(manyKeys)
	defer s.Close()
	benchKeys(b, keys(manyKeys), sluiceTake(s))
}

// BenchmarkXTimeMap100k is the common per-key pattern: a map of
// x/time/rate Limiters under one mutex, over 100k pre-filled keys.
func BenchmarkXTimeMap100k(b *testing.B) {
	var mu sync.Mutex
	m := make(map[string]*rate.Limiter)
	benchKeys(b, keys(manyKeys), func(key string) bool {
		mu.Lock()
		l, ok := m[key]
		if !ok {
			l = rate.NewLimiter(1e9, 1e9)
			m[key] = l
		}
		mu.Unlock()
		return l.Allow()
	})
}

// BenchmarkSluice1M is sluice's memory store over 1M pre-filled keys.
func BenchmarkSluice1M(b *testing.B) {
	s := newSluice(1_000_000)
	defer s.Close()
	benchKeys(b, keys(1_000_000), sluiceTake(s))
}

// BenchmarkSluiceIdleKeyMemory reports the heap bytes per idle gcra key
// beyond the key's own bytes, over 1M keys.
func BenchmarkSluiceIdleKeyMemory(b *testing.B) {
	const n = 1_000_000
	ks := keys(n)
	keyBytes := 0
	for _, k := range ks {
		keyBytes += len(k)
	}
	now := time.Now()
	for b.Loop() {
		before := heapAlloc()
		s := newSluice(n)
		for _, k := range ks {
			if _, err := s.Decide(ctx, store.RawKey(k), fast, now, 1); err != nil {
				b.Fatal(err)
			}
		}
		after := heapAlloc()
		b.ReportMetric(float64(int64(after)-int64(before)-int64(keyBytes))/n, "bytes/key")
		runtime.KeepAlive(s)
		s.Close()
	}
}

// newSluice returns a memory store with room for n keys.
func newSluice(n int) *memory.Store {
	return memory.New(memory.Options{MaxKeys: max(2*n, memory.DefaultMaxKeys), SweepInterval: noSweep})
}

// sluiceTake decides one request on s at the current time.
func sluiceTake(s *memory.Store) func(key string) bool {
	return func(key string) bool {
		d, err := s.Decide(ctx, store.RawKey(key), fast, wall.Now(), 1) // a key as a request brings it
		return d.Allowed && err == nil
	}
}

// benchGoLimiter benchmarks go-limiter's memorystore over n keys.
func benchGoLimiter(b *testing.B, n int) {
	// go-limiter refills in whole intervals (and, past the first, by
	// interval/tokens tokens per interval): an interval longer than the
	// benchmark with tokens to spare keeps it allowing.
	s, err := memorystore.New(&memorystore.Config{Tokens: 1 << 62, Interval: 24 * time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close(ctx)
	benchKeys(b, keys(n), func(key string) bool {
		_, _, _, ok, err := s.Take(ctx, key)
		return ok && err == nil
	})
}

// benchKeys pre-fills the keys with one request each, then times take over
// them in turn, as requests: see requests.
func benchKeys(b *testing.B, ks []string, take func(key string) bool) {
	for _, k := range ks {
		take(k)
	}
	ks = requests(ks)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if !take(ks[i]) {
			b.Fatal("denied or failed")
		}
		if i++; i == len(ks) {
			i = 0
		}
	}
}

// requests returns the keys as requests bring them: a copy of each, in a
// fixed shuffled order.
//
// A map that keeps the string it was given, as go-limiter's and
// XTimeMap100k's do, compares a key with it by pointer before reading any
// byte: looked up with the very strings it stored, it never reads a stored
// key. sluice's store keeps a copy of its own (so as never to retain a
// caller's buffer) and always reads it; with equal copies every contender
// pays that read, as a request whose key is built for it does (sluice's
// gateway builds header-valued keys per request, and keys past its key
// cache's bound). And visited in the order they were inserted, the keys
// let the prefetcher stream whatever was allocated in that order
// (go-limiter's buckets, stored strings, entries kept in insertion order),
// hiding misses that requests arriving in any other order pay.
func requests(ks []string) []string {
	rs := make([]string, len(ks))
	for i, j := range rand.New(rand.NewPCG(1, 2)).Perm(len(ks)) {
		rs[i] = string([]byte(ks[j]))
	}
	return rs
}

func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
