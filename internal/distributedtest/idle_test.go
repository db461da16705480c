package distributedtest

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
)

// An instance that turned degraded while Redis was down, and then gets no
// requests and no readiness checks, returns to shared counting by itself
// once Redis is back: its background probe finds out. Only /metrics is
// read, which probes nothing.
func TestIdleInstanceReturnsToShared(t *testing.T) {
	srv := redistest.StartServer(t)
	up := newUpstream(t)
	s := setup{addrs: []string{srv.Addr}, prefix: redistest.KeyPrefix(t), timeout: "50ms", onFailure: "open", instances: 1, rate: "30/m"}
	inst := startInstance(t, s, up)
	c := newClient(t)
	if a := get(c, inst, "partner-a"); a.status != 200 {
		t.Fatalf("with Redis up: %d, want 200", a.status)
	}
	srv.Stop()
	for range 3 { // three failures open the circuit
		if a := get(c, inst, "partner-a"); a.status != 200 {
			t.Fatalf("on_failure open, Redis down: %d, want 200", a.status)
		}
	}
	if got := metric(t, c, inst, "sluice_store_degraded"); got != 1 {
		t.Fatalf("sluice_store_degraded %v after three failures, want 1", got)
	}
	srv.Restart(t)
	start := time.Now()
	for metric(t, c, inst, "sluice_store_degraded") != 0 {
		if time.Since(start) > maxRecovery {
			t.Fatalf("an idle instance still degraded %v after Redis came back", maxRecovery)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("idle instance shared again %v after Redis came back", time.Since(start))
}
