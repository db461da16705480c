package memory

import (
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// fast keeps every benchmarked request allowed, so that the numbers are
// those of the common case.
var fast = limiter.MustNew(limiter.GCRA, 1_000_000_000, time.Second, 0)

// benchStore returns a store with room for n keys and no sweeps.
func benchStore(b *testing.B, n int) *Store {
	return newTest(b, Options{MaxKeys: max(2*n, DefaultMaxKeys)})
}

// benchKeys returns n distinct keys shaped as the gateway builds them.
func benchKeys(n int) []store.Key {
	keys := make([]store.Key, n)
	for i := range keys {
		keys[i] = store.NewKey("claims", "client-"+strconv.Itoa(i))
	}
	return keys
}

// BenchmarkDecideHotKey decides one key over and over at a fixed time: the
// store's own cost.
func BenchmarkDecideHotKey(b *testing.B) {
	s := benchStore(b, 1)
	b.ReportAllocs()
	hot := store.RawKey("hot") // made once, as a caller keeps its keys
	for b.Loop() {
		if _, err := s.Decide(ctx, hot, fast, t0, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecideHotKeyClock reads the clock once per decision, as a
// request does.
func BenchmarkDecideHotKeyClock(b *testing.B) {
	s := benchStore(b, 1)
	b.ReportAllocs()
	hot := store.RawKey("hot") // made once, as a caller keeps its keys
	for b.Loop() {
		if _, err := s.Decide(ctx, hot, fast, time.Now(), 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecideHotKeyParallel decides one key from GOMAXPROCS goroutines
// at a fixed time: they all take the same shard's lock.
func BenchmarkDecideHotKeyParallel(b *testing.B) {
	s := benchStore(b, 1)
	b.ReportAllocs()
	hot := store.RawKey("hot") // made once, as a caller keeps its keys
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Decide(ctx, hot, fast, t0, 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkDecideHotKeyClockParallel is BenchmarkDecideHotKeyParallel
// reading the clock once per decision.
func BenchmarkDecideHotKeyClockParallel(b *testing.B) {
	s := benchStore(b, 1)
	b.ReportAllocs()
	hot := store.RawKey("hot") // made once, as a caller keeps its keys
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.Decide(ctx, hot, fast, time.Now(), 1); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkDecideKeys decides over many pre-filled keys in turn, reading
// the clock once per decision: the cost of cache misses.
func BenchmarkDecideKeys(b *testing.B) {
	for _, n := range []int{100_000, 1_000_000} {
		b.Run(strconv.Itoa(n/1000)+"k", func(b *testing.B) {
			s := benchStore(b, n)
			keys := benchKeys(n)
			for _, k := range keys {
				mustDecide(b, s, k, fast, time.Now())
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := s.Decide(ctx, keys[i], fast, time.Now(), 1); err != nil {
					b.Fatal(err)
				}
				if i++; i == len(keys) {
					i = 0
				}
			}
		})
	}
}

// BenchmarkDecideAlgorithm decides one key at a fixed time per algorithm.
// sliding_log's requests fall in one microsecond and share an entry; once
// its rate (at most 10000) is spent it denies, looking at that one entry.
func BenchmarkDecideAlgorithm(b *testing.B) {
	for _, alg := range limiter.Algorithms {
		b.Run(alg.String(), func(b *testing.B) {
			rate := int64(1_000_000_000)
			if alg == limiter.SlidingLog {
				rate = limiter.MaxLogRate
			}
			l := limiter.MustNew(alg, rate, time.Second, 0)
			s := benchStore(b, 1)
			b.ReportAllocs()
			hot := store.RawKey("hot") // made once, as a caller keeps its keys
			for b.Loop() {
				if _, err := s.Decide(ctx, hot, l, t0, 1); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkIdleKeyMemory reports the heap bytes per idle key beyond the
// key's own bytes, for 1M gcra keys.
func BenchmarkIdleKeyMemory(b *testing.B) {
	const n = 1_000_000
	keys := benchKeys(n)
	keyBytes := 0
	for _, k := range keys {
		keyBytes += k.Len()
	}
	for b.Loop() {
		before := heapAlloc()
		s := New(Options{MaxKeys: 2 * n, Clock: clock.NewFake(t0)})
		for _, k := range keys {
			mustDecide(b, s, k, fast, t0)
		}
		after := heapAlloc()
		b.ReportMetric(float64(int64(after)-int64(before)-int64(keyBytes))/n, "bytes/key")
		runtime.KeepAlive(s)
		s.Close()
	}
}

func heapAlloc() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// BenchmarkDecideFullStore decides new keys in a store full of limited
// keys (100k, 1/h each, spent): every new key finds no room and is counted
// on its rule's overflow counter. It is what a flood of distinct keys costs
// once it has filled the store.
func BenchmarkDecideFullStore(b *testing.B) {
	const n = 100_000
	s := newTest(b, Options{MaxKeys: n})
	spent := limiter.MustNew(limiter.FixedWindow, 1, time.Hour, 0)
	for i := range 2 * n { // more than fit: every shard full
		if _, err := s.Decide(ctx, store.NewKey("tenants", strconv.Itoa(i)), spent, t0, 1); err != nil {
			b.Fatal(err)
		}
	}
	keys := benchKeys(1 << 16)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := s.Decide(ctx, keys[i&(len(keys)-1)], spent, t0, 1); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkDecideAll decides the two rules of one request (a client's and
// an address's) all or nothing, allowed (pass) and refused by one (limited),
// against what a caller did before the store could: a batch of looks,
// then a batch that spends or asks the refused again (two_batches).
func BenchmarkDecideAll(b *testing.B) {
	over := limiter.MustNew(limiter.GCRA, 1, 24*time.Hour, 0)
	for _, bc := range []struct {
		name  string
		limit limiter.Limit
	}{{"pass", fast}, {"limited", over}} {
		reqs := []store.Request{
			{Key: store.NewKey("claims", "client-1"), Limit: fast, Cost: 1},
			{Key: store.NewKey("per-ip", "192.0.2.1"), Limit: bc.limit, Cost: 1},
		}
		looks := []store.Request{reqs[0], reqs[1]}
		looks[0].Cost, looks[1].Cost = 0, 0
		dst := make([]store.Result, 0, len(reqs))
		b.Run(bc.name, func(b *testing.B) {
			s := benchStore(b, 2)
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if dst, err = s.DecideAll(ctx, dst[:0], reqs, t0); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(bc.name+"/two_batches", func(b *testing.B) {
			s := benchStore(b, 2)
			again := reqs[1:]
			b.ReportAllocs()
			for b.Loop() {
				res, err := s.DecideEach(ctx, dst[:0], looks, t0)
				if err != nil {
					b.Fatal(err)
				}
				if res[1].Decision.Remaining >= 1 {
					_, err = s.DecideEach(ctx, dst[:0], reqs, t0)
				} else {
					_, err = s.DecideEach(ctx, dst[:0], again, t0)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
