package throttle

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
)

// benchThrottle uses the real clock, as a gateway does.
func benchThrottle(b *testing.B, cfg Config) *Throttle {
	cfg.Clock = clock.Real{}
	th, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return th
}

// One caller, always below the limit: the cost a request pays when the
// service is not full.
func BenchmarkAcquireRelease(b *testing.B) {
	th := benchThrottle(b, Config{MaxInFlight: 100, Queue: Queue{MaxLength: 100}})
	ctx := context.Background()
	r := Request{Client: "a"}
	b.ReportAllocs()
	for b.Loop() {
		d := th.Acquire(ctx, r)
		d.Release(Outcome{Status: 200})
	}
}

// The same with the adaptive limit on (a latency sample per request).
func BenchmarkAcquireReleaseAdaptive(b *testing.B) {
	th := benchThrottle(b, Config{MaxInFlight: 100, Adaptive: &Adaptive{MinInFlight: 1, LatencyTarget: 100 * time.Millisecond}})
	ctx := context.Background()
	r := Request{Client: "a"}
	b.ReportAllocs()
	for b.Loop() {
		d := th.Acquire(ctx, r)
		d.Release(Outcome{Status: 200})
	}
}

// Many callers, a limit they never reach: the one mutex under contention.
func BenchmarkAcquireReleaseParallel(b *testing.B) {
	th := benchThrottle(b, Config{MaxInFlight: 1 << 20})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := Request{Client: "a"}
		for pb.Next() {
			d := th.Acquire(ctx, r)
			d.Release(Outcome{Status: 200})
		}
	})
}

// Many callers and a limit of 1: nearly every request queues and is
// handed its slot by the one before it.
func BenchmarkAcquireReleaseParallelQueued(b *testing.B) {
	th := benchThrottle(b, Config{MaxInFlight: 1, Queue: Queue{MaxLength: 1 << 20}})
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := Request{Client: "a"}
		for pb.Next() {
			d := th.Acquire(ctx, r)
			if !d.Admitted {
				b.Errorf("refused: %v", d.Reason)
				return
			}
			d.Release(Outcome{Status: 200})
		}
	})
}
