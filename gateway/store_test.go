package gateway

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/throttle"
)

// The memory store the gateway opens sweeps on the gateway's clock, the
// one that times its decisions: a sweep on another clock would judge
// expiry by another time (a real clock ahead of the gateway's forgets
// every counter at its first tick, limited or not; one behind it keeps
// them all).
func TestMemoryStoreSweepsOnTheGatewaysClock(t *testing.T) {
	cfg, err := config.Parse("sluice.yaml", []byte("listen: 127.0.0.1:0\nupstream: http://127.0.0.1:9\nrules:\n  - name: r\n    rate: 1/m\n"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2090, 1, 2, 3, 4, 5, 0, time.UTC) // a real clock would find nothing expired
	fake := clock.NewFake(start)
	st, err := openStore(context.Background(), cfg, fake, newMetrics(), slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mem := st.(*memory.Store)
	l := limiter.MustNew(limiter.FixedWindow, 1, time.Minute, 0)
	if _, err := mem.Decide(context.Background(), store.RawKey("k"), l, start, 1); err != nil {
		t.Fatal(err)
	}
	fake.Advance(time.Minute + memory.DefaultSweepInterval) // one sweep, after the window has ended
	for deadline := time.Now().Add(10 * time.Second); mem.Len() != 0; {
		if time.Now().After(deadline) { // an upper bound for the sweeper goroutine, not a timing assertion
			t.Fatalf("the counter was not swept after the gateway's clock passed its expiry (Len %d)", mem.Len())
		}
		time.Sleep(time.Millisecond)
	}
}

// TestNewRefusingProtectClosesStore: New refusing a protect block (a File
// built in code, which config.Load would have refused) closes the store it
// opened, with its sweeper, rather than leaving them running.
func TestNewRefusingProtectClosesStore(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	cfg, err := config.Parse("sluice.yaml", []byte("listen: 127.0.0.1:0\nupstream: http://127.0.0.1:9\nrules:\n  - name: r\n    rate: 1/m\n"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.Protect = &throttle.Config{MaxInFlight: 0}
	if _, err := New(Options{Config: cfg, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))}); err == nil {
		t.Fatal("New accepted protect with max_in_flight 0")
	}
}

// The memory store the gateway opens keeps the keys of others sharing it
// (package rls's, "rls:" and a domain: decision.ForeignKey) in a room of
// their own, store.memory.max_rls_keys: a flood of them, each at its
// limit, leaves the policy's keys their room, and a policy key that
// finds none is told it was counted on the shared counter.
func TestMemoryStoreKeepsRLSKeysApart(t *testing.T) {
	cfg, err := config.Parse("sluice.yaml", []byte("listen: 127.0.0.1:0\nupstream: http://127.0.0.1:9\n"+
		"store: {memory: {max_keys: 1, max_rls_keys: 1}}\nrules:\n  - name: r\n    rate: 1/m\n"))
	if err != nil {
		t.Fatal(err)
	}
	fake := clock.NewFake(time.Date(2090, 1, 2, 3, 4, 0, 0, time.UTC))
	st, err := openStore(context.Background(), cfg, fake, newMetrics(), slog.New(slog.NewJSONHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l := limiter.MustNew(limiter.FixedWindow, 1, time.Hour, 0)
	decide := func(key store.Key) store.Result {
		t.Helper()
		res, err := st.DecideEach(context.Background(), nil, []store.Request{{Key: key, Limit: l, Cost: 1}}, fake.Now())
		if err != nil || res[0].Err != nil {
			t.Fatal(err, res)
		}
		return res[0]
	}
	for i := range 100 {
		if res := decide(store.NewKey("rls:edge", "user", "=", strconv.Itoa(i))); !res.Decision.Allowed || res.Shared {
			t.Fatalf("rls key %d: %+v, want its own first count", i, res)
		}
	}
	if res := decide(store.GroupKey(store.Parts("ip", "192.0.2.1"), "r", "t")); !res.Decision.Allowed || res.Shared {
		t.Fatalf("the policy's first key after the flood: %+v, want its own counter", res)
	}
	if res := decide(store.GroupKey(store.Parts("ip", "192.0.2.2"), "r", "t")); !res.Shared {
		t.Fatalf("a policy key without room: %+v, want the shared counter, said so", res)
	}
}
