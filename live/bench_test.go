package live_test

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/live"
)

// BenchmarkObserve is the cost on the data path of a request matching two
// rules, on counters already listed: one caller allowed (allowed), one
// refused (limited).
func BenchmarkObserve(b *testing.B) {
	for _, bc := range []struct {
		name string
		rep  *decision.Report
	}{
		{"allowed", report("partner-a", 0, allowed("ka", 50), result{rule: 1, key: "ip1", outcome: decision.Allowed, limit: 10, remaining: 5})},
		{"limited", report("partner-a", time.Second, limited("ka"), result{rule: 1, key: "ip1", outcome: decision.NotSpent, limit: 10, remaining: 5})},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := live.New(testPolicy(b), live.Options{})
			now := epoch
			b.ReportAllocs()
			for b.Loop() {
				now = now.Add(time.Microsecond)
				l.Observe(now, bc.rep)
			}
		})
	}
}

// BenchmarkObserveParallel is BenchmarkObserve's allowed request on every
// core at once, each goroutine its own caller on the same rules (the
// rule's mutex is shared).
func BenchmarkObserveParallel(b *testing.B) {
	l := live.New(testPolicy(b), live.Options{})
	var n atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		key := fmt.Sprint("k", n.Add(1))
		rep := report(key, 0, allowed(key, 50), result{rule: 1, key: "ip" + key, outcome: decision.Allowed, limit: 10, remaining: 5})
		now := epoch
		for pb.Next() {
			now = now.Add(time.Microsecond)
			l.Observe(now, rep)
		}
	})
}

// BenchmarkObserveKeys spreads requests over many counters (more than
// the sketches list): keys allowed at 50%, or each refused, the worst
// case, in which every new counter takes a listed one's place.
func BenchmarkObserveKeys(b *testing.B) {
	for _, keys := range []int{100, 100_000} {
		for _, refuse := range []bool{false, true} {
			b.Run(fmt.Sprintf("keys=%d/refused=%v", keys, refuse), func(b *testing.B) {
				reps := make([]*decision.Report, keys)
				for i := range reps {
					k := fmt.Sprint("k", i)
					if refuse {
						reps[i] = report(k, time.Second, limited(k))
					} else {
						reps[i] = report(k, 0, allowed(k, 50))
					}
				}
				l := live.New(testPolicy(b), live.Options{})
				now := epoch
				i := 0
				b.ReportAllocs()
				for b.Loop() {
					now = now.Add(time.Microsecond)
					l.Observe(now, reps[i%keys])
					i++
				}
			})
		}
	}
}
