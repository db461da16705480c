package redis

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// TestGrantConcurrent: 64 goroutines decide on one key over three stores
// with grants of 10 on one Redis (Redis TIME), and on a Cluster, far more
// than the limit: exactly the limit is admitted, no store holds more than
// a grant, and requests that found no units while a grant call was in
// flight went in the next call, without a call of their own: at least
// 3/4 of the decisions saved one (waiting for the call in flight and
// then each taking the units it brought, most would go without grants).
func TestGrantConcurrent(t *testing.T) {
	t.Parallel()
	t.Run("standalone", func(t *testing.T) {
		t.Parallel()
		srv := redistest.StartServer(t)
		checkConcurrent(t, []string{srv.Addr}, func() int { return redistest.ScriptCalls(t, srv.Addr) })
	})
	t.Run("cluster", func(t *testing.T) {
		t.Parallel()
		c := redistest.StartCluster(t)
		checkConcurrent(t, c.Addrs, func() int { return redistest.ScriptCalls(t, c.Addrs...) })
	})
}

func checkConcurrent(t *testing.T, addrs []string, scriptCalls func() int) {
	const limit, max, workers, each = 3000, 10, 64, 60
	for _, alg := range []limiter.Algorithm{limiter.FixedWindow, limiter.GCRA} {
		t.Run(alg.String(), func(t *testing.T) {
			prefix := redistest.KeyPrefix(t)
			var stores [3]*Store
			for i := range stores {
				stores[i] = openGrants(t, addrs, prefix, false, max, time.Minute, clock.Real{})
			}
			burst := int64(0)
			if alg.HasBurst() {
				burst = limit
			}
			l := mustLimit(t, alg, limit, 24*time.Hour, burst)
			before := scriptCalls()
			var admitted, denied, failed atomic.Int64
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					s := stores[w%3]
					for range each {
						d, err := s.Decide(context.Background(), store.RawKey("k"), l, time.Now(), 1)
						switch {
						case err != nil:
							failed.Add(1)
						case d.Allowed:
							admitted.Add(1)
						default:
							denied.Add(1)
						}
					}
				})
			}
			wg.Wait()
			calls := scriptCalls() - before
			var held, saved int64
			for i, s := range stores {
				if h := s.heldTotal("k"); h > max {
					t.Errorf("store %d holds %d units, more than a grant (%d)", i, h, max)
				}
				held += s.heldTotal("k")
				saved += s.GrantStats().CallsSaved.Load()
			}
			if failed.Load() != 0 || admitted.Load()+held > limit || admitted.Load() < limit-3*max {
				t.Fatalf("admitted %d, held %d, denied %d, failed %d: want %d admitted or held", admitted.Load(), held,
					denied.Load(), failed.Load(), limit)
			}
			// Drain what the stores hold: admitted then is the limit exactly.
			for _, s := range stores {
				for s.heldTotal("k") > 0 {
					if d := decide(t, s, store.RawKey("k"), l, time.Now(), 1); d.Allowed {
						admitted.Add(1)
					}
				}
			}
			if admitted.Load() != limit {
				t.Fatalf("admitted %d, want %d", admitted.Load(), limit)
			}
			if decisions := int64(workers * each); saved < decisions*3/4 || calls > int(decisions)/4 {
				t.Fatalf("%d script calls, %d saved for %d decisions", calls, saved, decisions)
			}
			t.Logf("%s: %d script calls for %d decisions, %d saved", alg, calls, workers*each, saved)
		})
	}
}

// heldTotal is what s's grant on key holds, whatever its limit.
func (s *Store) heldTotal(key string) int64 { return held(s, store.RawKey(key)) }

// BenchmarkGrantHotKey: 64 goroutines on one key allowed everything,
// without grants and with grants of 10 and 100; script calls per decision
// are reported as calls/op.
//
//	go test -run '^$' -bench GrantHotKey -cpu 2 ./store/redis/
func BenchmarkGrantHotKey(b *testing.B) {
	srv := redistest.StartServer(b)
	l := benchLimit(b, limiter.GCRA)
	for _, max := range []int64{0, 10, 100} {
		b.Run(fmt.Sprintf("max_%d", max), func(b *testing.B) {
			s := openGrants(b, []string{srv.Addr}, redistest.KeyPrefix(b), false, max, time.Second, clock.Real{})
			decide(b, s, store.RawKey("hot"), l, time.Now(), 1)
			before := redistest.ScriptCalls(b, srv.Addr)
			b.SetParallelism(benchParallelism)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.Decide(context.Background(), store.RawKey("hot"), l, time.Now(), 1); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64(redistest.ScriptCalls(b, srv.Addr)-before)/float64(b.N), "calls/op")
		})
	}
}
