package sluice_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-rl/sluice"
	"github.com/sluice-rl/sluice/limiter"
)

// BenchmarkAllow measures Allow on the memory store: one hot key and
// 100,000 keys, serial and parallel. Run it with
// go test -run '^$' -bench Allow -benchmem .
func BenchmarkAllow(b *testing.B) {
	for _, keys := range []int{1, 100_000} {
		names := make([]string, keys)
		for i := range names {
			names[i] = "partner-" + strconv.Itoa(i)
		}
		lim := sluice.New(limiter.MustNew(limiter.GCRA, 1_000_000, time.Second, 1000), sluice.Options{})
		b.Cleanup(func() { _ = lim.Close() })
		ctx := context.Background()
		b.Run("keys="+strconv.Itoa(keys)+"/serial", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				lim.Allow(ctx, names[i%keys])
			}
		})
		b.Run("keys="+strconv.Itoa(keys)+"/parallel", func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for i := 0; pb.Next(); i++ {
					lim.Allow(ctx, names[i%keys])
				}
			})
		})
	}
}
