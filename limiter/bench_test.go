package limiter_test

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// BenchmarkDecide measures each algorithm alone, on an allowed path (a
// sliding_log at its limit denies, reading only what expires).
func BenchmarkDecide(b *testing.B) {
	for _, alg := range limiter.Algorithms {
		b.Run(alg.String(), func(b *testing.B) {
			burst := int64(0)
			rate := int64(1_000_000_000)
			if alg == limiter.SlidingLog {
				rate = 10000
			}
			if alg.HasBurst() {
				burst = 1_000_000
			}
			l := limiter.MustNew(alg, rate, time.Second, burst)
			var s limiter.State
			now := time.Unix(1_800_000_000, 0)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				_, s = limiter.Decide(l, s, now.Add(time.Duration(i)*time.Microsecond), 1)
			}
		})
	}
}

// BenchmarkUnixMicro is the loop's own cost: advancing and converting time.
func BenchmarkUnixMicro(b *testing.B) {
	now := time.Unix(1_800_000_000, 0)
	var x int64
	for i := 0; i < b.N; i++ {
		x += limiter.UnixMicro(now.Add(time.Duration(i) * time.Microsecond))
	}
	_ = x
}

// BenchmarkApply is the stores' entry point on the allowed path of a gcra
// limit, at a fixed time: the algorithm's own cost.
func BenchmarkApply(b *testing.B) {
	for _, tc := range []struct {
		name  string
		limit limiter.Limit
	}{
		{"n=1", limiter.MustNew(limiter.GCRA, 1_000_000, time.Second, 1_000_000_000)},
		{"n=1000", limiter.MustNew(limiter.GCRA, 1_000_000_000, time.Second, 1_000_000_000)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var s limiter.State
			now := time.Unix(1_800_000_000, 0)
			for b.Loop() {
				if d := tc.limit.Apply(&s, now, 1); !d.Allowed {
					b.Fatal("denied")
				}
			}
		})
	}
}

// BenchmarkSlidingWindowFull is sliding_window with a full previous window
// over an hour: every decision looks for when Remaining next grows
// (Decision.Refill) in the previous window's share.
func BenchmarkSlidingWindowFull(b *testing.B) {
	l := limiter.MustNew(limiter.SlidingWindow, 1_000_000_000, time.Hour, 0)
	var s limiter.State
	now := time.Unix(1_800_000_000, 0).Add(30 * time.Minute)
	for i := range 100_000 { // the previous window
		_, s = limiter.Decide(l, s, now.Add(-time.Hour+time.Duration(i)*time.Millisecond), 1)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, s = limiter.Decide(l, s, now.Add(time.Duration(i)*time.Microsecond), 1)
	}
}
