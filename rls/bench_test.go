package rls

import (
	"context"
	"strconv"
	"testing"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/config/storeopen"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/store/memory"
)

// BenchmarkShouldRateLimit is the handler alone, without gRPC, on the
// memory store: one descriptor of a key-only rule, one key or 100k.
func BenchmarkShouldRateLimit(b *testing.B) {
	for _, keys := range []int{1, 100_000} {
		b.Run("keys="+strconv.Itoa(keys), func(b *testing.B) {
			clk := clock.NewFake(epoch)
			st := memory.New(memory.Options{Clock: clk})
			defer st.Close()
			srv, err := NewServer(Options{Store: st, Clock: clk,
				Rules: rulesFrom(b, "domain: bench\ndescriptors:\n  - {key: key, rate_limit: {unit: second, requests_per_unit: 1000000000}}\n")})
			if err != nil {
				b.Fatal(err)
			}
			defer srv.Stop()
			reqs := make([]*pb.RateLimitRequest, keys)
			for i := range reqs {
				reqs[i] = request("bench", desc("key=k"+strconv.Itoa(i)))
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				if _, err := srv.ShouldRateLimit(context.Background(), reqs[i%keys]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkShouldRateLimitRedis is the handler on a real Redis through
// the failover store, 64 calls in flight: what the Redis path costs
// sluice's process besides gRPC.
func BenchmarkShouldRateLimitRedis(b *testing.B) {
	srvRedis := redistest.StartServer(b)
	sc := config.Store{Type: "redis", Redis: config.Redis{Addrs: []string{srvRedis.Addr}, Prefix: redistest.KeyPrefix(b)}}
	st, err := storeopen.Open(context.Background(), sc, storeopen.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	srv, err := NewServer(Options{Store: st,
		Rules: rulesFrom(b, "domain: bench\ndescriptors:\n  - {key: key, rate_limit: {unit: second, requests_per_unit: 1000000000}}\n")})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Stop()
	req := request("bench", desc("key=k"))
	b.SetParallelism(32)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := srv.ShouldRateLimit(context.Background(), req); err != nil {
				b.Fatal(err)
			}
		}
	})
}
