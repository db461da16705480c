package gateway

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/internal/fastproxy"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/policy"
)

// runInstance starts a gateway for the configuration text and runs it on
// loopback listeners until the test ends.
func runInstance(t *testing.T, text string) *Gateway {
	t.Helper()
	cfg, err := config.Parse("sluice.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(Options{Config: cfg, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	var lns [2]net.Listener
	for i := range lns {
		if lns[i], err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, lns[0], lns[1]) }()
	// Answered on both sides: Run's servers have started (a Run ended
	// before its fasthttp server began to serve would wait for it).
	for _, ln := range lns {
		resp, err := http.Get("http://" + ln.Addr().String() + "/healthz")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		_ = g.Close()
	})
	return g
}

func instancesConfig(store, rate string) string {
	return "listen: 127.0.0.1:0\nupstream: http://127.0.0.1:9\n" + store + `rules:
  - name: claims
    match: { path: /claims }
    rate: ` + rate + `
  - name: reports
    match: { path: /reports }
    rate: 5/m
`
}

// TestInstancesOnRedis: two instances on one Redis, one with a changed
// claims rule, each list both (this one first, marked self), with
// different configuration versions, and rulesDiffer names claims alone.
func TestInstancesOnRedis(t *testing.T) {
	srv := redistest.StartServer(t)
	// Registered before the instances: runs after they have stopped.
	t.Cleanup(func() {
		opts := []goleak.Option{goleak.IgnoreCurrent()}
		for _, f := range fastproxy.Lingering {
			opts = append(opts, goleak.IgnoreAnyFunction(f))
		}
		goleak.VerifyNone(t, opts...)
	})
	st := "store: {type: redis, redis: {addrs: [" + srv.Addr + "], prefix: " + redistest.KeyPrefix(t) + "}}\n"
	a, b := runInstance(t, instancesConfig(st, "100/m")), runInstance(t, instancesConfig(st, "120/m"))
	var got []InstanceInfo
	for end := time.Now().Add(10 * time.Second); len(got) < 2; time.Sleep(20 * time.Millisecond) {
		if got = a.instances(context.Background()); time.Now().After(end) {
			t.Fatalf("instances after 10s: %+v, want both", got)
		}
	}
	if len(got) != 2 || !got[0].Self || got[0].ID != a.instanceID || got[1].ID != b.instanceID || got[1].Self {
		t.Fatalf("instances: %+v, want a (self) then b", got)
	}
	if got[0].Version == got[1].Version || got[0].Version == "" || len(got[0].Version) != 8 {
		t.Errorf("versions %q and %q: want two different 8-digit digests", got[0].Version, got[1].Version)
	}
	diff := rulesDiffer(got)
	if len(diff) != 1 || diff[0].Rule != "claims" || len(diff[0].Versions) != 2 {
		t.Errorf("rulesDiffer: %+v, want claims alone, in two versions", diff)
	}
	if info := a.storeInfo(); !info.Shared || info.Type != "redis" || info.State != "shared" {
		t.Errorf("storeInfo: %+v, want redis, shared", info)
	}
}

// TestInstancesOnMemory: on the memory store an instance lists itself
// alone, and the store's note says its counters are its own.
func TestInstancesOnMemory(t *testing.T) {
	g := runInstance(t, instancesConfig("", "100/m"))
	got := g.instances(context.Background())
	if len(got) != 1 || !got[0].Self || got[0].Version != configVersion(g.config().Policy) {
		t.Errorf("instances: %+v, want this one alone", got)
	}
	info := g.storeInfo()
	if info.Shared || info.State != "local" || info.Note != "this instance's counters are its own (memory store)" {
		t.Errorf("storeInfo: %+v", info)
	}
	same := runInstance(t, instancesConfig("", "100/m"))
	if v := same.self().Version; v != got[0].Version {
		t.Errorf("the same file gives versions %q and %q", got[0].Version, v)
	}
}

// TestConfigVersionTimeZone: two files that differ only in time_zone are
// two versions (a *time.Location alone marshals as {}).
func TestConfigVersionTimeZone(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	utc := policy.Policy{Rules: []policy.Rule{{Name: "a"}}}
	other := utc
	other.Location = berlin
	if configVersion(utc) == configVersion(other) {
		t.Error("time_zone Europe/Berlin has the same version as UTC")
	}
}
