package gateway_test

import (
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
)

// leasedQuotaConfig is one hot caller's two rules, 300 a day each (gcra,
// whose burst is the 300; fixed_window, whose window is the day), on a
// Redis store whose instances lease a hot key's quota 10 units at a time.
// A store failure would answer 503 (closed), never admit: the deadline is
// long, for a machine busy with -race.
const leasedQuotaConfig = `listen: 127.0.0.1:18080
upstream: {{UPSTREAM}}
admin: 127.0.0.1:18090
store:
  type: redis
  redis: { addrs: [%s], prefix: %s, timeout: 5s, lease: { max: 10, ttl: 1m } }
  on_failure: closed
rules:
  - name: bucket
    match: { path: /bucket }
    key: header:X-Caller
    algorithm: gcra
    rate: 300/d
  - name: window
    match: { path: /window }
    key: header:X-Caller
    algorithm: fixed_window
    rate: 300/d
`

// TestLeasedQuotaInstances: three gateways lease one Redis's quota. A hot
// caller spread round-robin over them, 32 requests in flight, twice its
// limit per rule, is admitted exactly the limit, counted: at most the
// limit while the units the gateways hold are still unused, the limit
// once a few more requests have used them up. Each gateway's /metrics
// shows the Redis calls its leases saved, and Redis ran far fewer
// script calls than there were decisions.
func TestLeasedQuotaInstances(t *testing.T) {
	const limit, max, instances, workers = 300, 10, 3, 32
	if left := time.Until(time.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)); left < time.Minute {
		t.Skip("the fixed window (a UTC day) ends within a minute")
	}
	srv := redistest.StartServer(t)
	cfg := fmt.Sprintf(leasedQuotaConfig, srv.Addr, redistest.KeyPrefix(t))
	var gws [instances]*harness
	for i := range gws {
		gws[i] = startGateway(t, cfg)
	}
	before := redistest.ScriptCalls(t, srv.Addr)
	for _, path := range []string{"/bucket", "/window"} {
		var next, admitted, denied atomic.Int64
		send := func() {
			h := gws[next.Add(1)%instances]
			switch s := h.do(h.url, http.MethodGet, path, map[string]string{"X-Caller": "hot"}, "").Status; s {
			case http.StatusOK:
				admitted.Add(1)
			case http.StatusTooManyRequests:
				denied.Add(1)
			default:
				t.Errorf("%s: status %d", path, s)
			}
		}
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range 2 * limit / workers {
					send()
				}
			})
		}
		wg.Wait()
		if admitted.Load() > limit || admitted.Load() < limit-instances*max {
			t.Fatalf("%s: %d admitted under load, want %d less what the %d gateways may hold (%d at most)",
				path, admitted.Load(), limit, instances, instances*max)
		}
		// Each gateway is sent more than it can hold: what is held is
		// admitted, and nothing more.
		for range 2 * instances * max {
			send()
		}
		if admitted.Load() != limit {
			t.Fatalf("%s: %d admitted, %d denied; want %d admitted", path, admitted.Load(), denied.Load(), limit)
		}
	}
	calls := redistest.ScriptCalls(t, srv.Addr) - before
	decisions := 2 * (2*limit/workers*workers + 2*instances*max)
	var saved, grants float64
	for i, h := range gws {
		m := h.metrics()
		s, g := metric(m, "sluice_redis_lease_calls_saved_total"), metric(m, "sluice_redis_lease_grants_total")
		if s <= 0 || g <= 0 {
			t.Errorf("gateway %d: %v calls saved, %v leases taken; want both above 0", i, s, g)
		}
		saved, grants = saved+s, grants+g
	}
	// 600 admitted, 10 at a time at most per call: at least half of them
	// saved a call; the denials are mostly answered by the gateways from
	// the denial they remember.
	if saved < limit || calls > 2*limit/4 {
		t.Errorf("%.0f calls saved, %.0f leases taken, %d script calls for %d decisions", saved, grants, calls, decisions)
	}
	t.Logf("%.0f calls saved, %.0f leases taken, %d script calls for %d decisions", saved, grants, calls, decisions)
}
