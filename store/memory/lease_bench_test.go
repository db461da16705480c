package memory

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/store"
)

// BenchmarkLeaseHotKey acquires and releases a lease on one key, serially
// and from every CPU: a request's cost under a concurrency rule.
func BenchmarkLeaseHotKey(b *testing.B) {
	limit := store.Concurrency{Max: 1 << 20, TTL: time.Minute}
	b.Run("serial", func(b *testing.B) {
		s := benchStore(b, 1)
		b.ReportAllocs()
		for b.Loop() {
			acquireRelease(b, s, store.RawKey("hot"), limit)
		}
	})
	b.Run("parallel", func(b *testing.B) {
		s := benchStore(b, 1)
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				acquireRelease(b, s, store.RawKey("hot"), limit)
			}
		})
	})
}

// BenchmarkLeaseManyKeys acquires and releases leases on 100k keys from
// every CPU.
func BenchmarkLeaseManyKeys(b *testing.B) {
	limit := store.Concurrency{Max: 10, TTL: time.Minute}
	keys := benchKeys(100_000)
	s := benchStore(b, len(keys))
	var next atomic.Uint64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			acquireRelease(b, s, keys[next.Add(1)%uint64(len(keys))], limit)
		}
	})
}

func acquireRelease(b *testing.B, s *Store, key store.Key, limit store.Concurrency) {
	d, err := s.Acquire(ctx, key, limit, t0, 1)
	if err != nil || !d.Allowed {
		b.Fatalf("%+v, %v", d, err)
	}
	if err := s.Release(ctx, d.Lease, t0); err != nil {
		b.Fatal(err)
	}
}
