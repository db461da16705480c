package redis

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// benchParallelism times GOMAXPROCS is the number of goroutines of the
// parallel benchmarks: 64 with -cpu 2, the gateway's concurrency in the
// bench/ scenarios.
const benchParallelism = 32

// benchLimit admits nearly everything, so that every decision writes:
// the costly path.
func benchLimit(b *testing.B, alg limiter.Algorithm) limiter.Limit {
	rate := int64(1_000_000_000)
	if alg == limiter.SlidingLog {
		rate = limiter.MaxLogRate // and the log stays short: one merged entry per µs
	}
	return mustLimit(b, alg, rate, time.Second, 0)
}

// benchStore starts a Redis and a store on it reading Redis TIME, as in
// production.
func benchStore(b *testing.B) *Store {
	srv := redistest.StartServer(b)
	return open(b, []string{srv.Addr}, false)
}

// BenchmarkDecideHotKey has every goroutine decide on one key, the worst
// case for Redis (one key, one node). Decisions per second = 1e9/ns_per_op.
func BenchmarkDecideHotKey(b *testing.B) {
	s := benchStore(b)
	for _, alg := range limiter.Algorithms {
		b.Run(alg.String(), func(b *testing.B) {
			l := benchLimit(b, alg)
			b.SetParallelism(benchParallelism)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.Decide(context.Background(), store.RawKey("hot:"+alg.String()), l, time.Time{}, 1); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkDecide100kKeys spreads the decisions over 100,000 keys.
func BenchmarkDecide100kKeys(b *testing.B) {
	const keys = 100_000
	names := make([]store.Key, keys)
	for i := range names {
		names[i] = store.NewKey("bench", strconv.Itoa(i))
	}
	s := benchStore(b)
	for _, alg := range []limiter.Algorithm{limiter.SlidingWindow, limiter.GCRA, limiter.SlidingLog} {
		b.Run(alg.String(), func(b *testing.B) {
			l := benchLimit(b, alg)
			var next atomic.Uint64
			b.SetParallelism(benchParallelism)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					key := names[next.Add(1)%keys]
					if _, err := s.Decide(context.Background(), key, l, time.Time{}, 1); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkDecideEach decides three rules of one request per call.
func BenchmarkDecideEach(b *testing.B) {
	s := benchStore(b)
	reqs := []store.Request{
		{Key: store.RawKey("batch:a"), Limit: benchLimit(b, limiter.SlidingWindow), Cost: 1},
		{Key: store.RawKey("batch:b"), Limit: benchLimit(b, limiter.GCRA), Cost: 1},
		{Key: store.RawKey("batch:c"), Limit: benchLimit(b, limiter.FixedWindow), Cost: 1},
	}
	b.SetParallelism(benchParallelism)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := s.DecideEach(context.Background(), nil, reqs, time.Time{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// floorScript is the least a Redis rate limiter can do: count and expire.
var floorScript = rueidis.NewLuaScript(`
local n = redis.call('INCR', KEYS[1])
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return n`)

// BenchmarkFloorIncr is the floor for the benchmarks above: a trivial
// INCR + PEXPIRE script through the same client, at the same concurrency,
// on one hot key. What the store adds to it is the algorithms' cost.
func BenchmarkFloorIncr(b *testing.B) {
	s := benchStore(b)
	key := []string{redisKey(s.prefix, store.RawKey("floor"))}
	args := []string{"1000"}
	b.SetParallelism(benchParallelism)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			err := floorScript.Exec(ctx, s.client, key, args).Error()
			cancel()
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
}
