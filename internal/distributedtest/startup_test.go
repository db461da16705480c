package distributedtest

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/gateway"
	"github.com/sluice-rl/sluice/internal/redistest"
)

// A gateway started while Redis is down. Today gateway.New refuses to start
// (store/redis.New fails when no address answers): the operator learns at
// once, but an instance restarted during a Redis outage stays down instead
// of serving by its on_failure policy until Redis is back. The test holds
// the gateway to either behaviour: fail fast naming the Redis address, or
// start degraded and turn shared once Redis is up.
func TestGatewayStartedWhileRedisIsDown(t *testing.T) {
	srv := redistest.StartServer(t)
	srv.Stop()
	up := newUpstream(t)
	s := setup{addrs: []string{srv.Addr}, prefix: redistest.KeyPrefix(t), timeout: "50ms", onFailure: "open", instances: 3, rate: "30/m"}
	cfg, err := config.Parse("sluice.yaml", []byte(s.yaml(up.srv.URL)))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	g, err := gateway.New(gateway.Options{Config: cfg, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	took := time.Since(start)
	if err != nil {
		t.Logf("gap: gateway.New with Redis down fails after %v: %v", took, err)
		if !strings.Contains(err.Error(), srv.Addr) || took > 6*time.Second {
			t.Errorf("gateway.New with Redis down: %v after %v; want a prompt error naming %s", err, took, srv.Addr)
		}
		return
	}
	_ = g.Close()
	// Starting is allowed: then the gateway must serve degraded and turn
	// shared by itself once Redis is up.
	insts := startInstances(t, 1, s, up)
	c := newClient(t)
	if a := get(c, insts[0], "partner-a"); a.status != 200 {
		t.Errorf("on_failure open, Redis down since start: got %d, want 200", a.status)
	}
	waitState(t, c, insts, "degraded (open)", maxDegrade)
	srv.Restart(t)
	waitState(t, c, insts, "shared", maxRecovery)
}
