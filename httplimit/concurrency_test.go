package httplimit_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// 64 goroutines send requests for one client at one instant (a fixed fake
// clock): exactly the limit passes, for every algorithm, and every request
// is reported once.
func TestConcurrentRequestsPassExactlyTheLimit(t *testing.T) {
	const goroutines, each, limit = 64, 4, 100
	for _, alg := range limiter.Algorithms {
		t.Run(alg.String(), func(t *testing.T) {
			p := partners()
			p.Rules[0].Algorithm = alg
			p.Rules[0].Rate = rate(limit, time.Minute)
			p.Plans["large"] = policy.Plan{}
			h := newHarness(t, p)
			h.clock.Advance(17 * time.Second)
			var passed, limited, other atomic.Int64
			var wg sync.WaitGroup
			for range goroutines {
				wg.Go(func() {
					for range each {
						switch h.get("/claims", "key-a").Code {
						case http.StatusOK:
							passed.Add(1)
						case http.StatusTooManyRequests:
							limited.Add(1)
						default:
							other.Add(1)
						}
					}
				})
			}
			wg.Wait()
			if passed.Load() != limit || limited.Load() != goroutines*each-limit || other.Load() != 0 {
				t.Errorf("passed %d, limited %d, other %d; want %d, %d, 0", passed.Load(), limited.Load(), other.Load(), limit, goroutines*each-limit)
			}
			if n := h.servedCount(); n != limit {
				t.Errorf("handler called %d times, want %d", n, limit)
			}
			if n := h.reportCount(); n != goroutines*each {
				t.Errorf("%d reports, want %d", n, goroutines*each)
			}
			wantStatus(t, h.get("/claims", "key-b"), 200, fmt.Sprintf("%v: partner-b unaffected", alg))
		})
	}
}
