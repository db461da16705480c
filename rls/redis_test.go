package rls

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/config/storeopen"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/store"
)

// hourRules limits by the hour, so that a table read on Redis TIME does
// not cross a window while it runs (unless started in an hour's last
// seconds, which the tests avoid by checking the remaining time).
const hourRules = `
domain: rl
descriptors:
  - key: foo
    rate_limit: {unit: hour, requests_per_unit: 2}
`

// openRedis opens the store as `sluice serve` does for these settings.
func openRedis(t *testing.T, addrs []string, prefix string, onFailure store.FailurePolicy) store.Store {
	t.Helper()
	sc := config.Store{Type: "redis", OnFailure: onFailure, Redis: config.Redis{Addrs: addrs, Timeout: 100 * time.Millisecond,
		Prefix: prefix}}
	st, err := storeopen.Open(context.Background(), sc, storeopen.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// TestSharedCountOnRedis: two servers on one Redis (or one Redis
// Cluster) count together, on Redis TIME.
func TestSharedCountOnRedis(t *testing.T) {
	for _, tc := range []struct {
		name  string
		addrs func(t *testing.T) []string
	}{
		{"redis", func(t *testing.T) []string { return []string{redistest.StartServer(t).Addr} }},
		{"cluster", func(t *testing.T) []string { return redistest.StartCluster(t).Addrs }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if windowLeft(time.Now(), time.Hour) < time.Minute {
				t.Skip("too close to the hour's end for a table on Redis TIME")
			}
			addrs := tc.addrs(t)
			clk := clock.NewFake(epoch) // ignored by the Redis store: it reads TIME
			prefix := redistest.KeyPrefix(t)
			a := startWith(t, rulesFrom(t, hourRules), openRedis(t, addrs, prefix, store.FailOpen), clk, Options{})
			b := startWith(t, rulesFrom(t, hourRules), openRedis(t, addrs, prefix, store.FailOpen), clk, Options{})
			for i, s := range []struct {
				h    *harness
				want string
			}{{a, "OK OK/1/"}, {b, "OK OK/0/"}, {a, "OVER_LIMIT OVER_LIMIT/0/"}} {
				if got := brief(s.h.ask(request("rl", desc("foo=x")))); len(got) < len(s.want) || got[:len(s.want)] != s.want {
					t.Errorf("call %d: got %q, want %q...", i, got, s.want)
				}
			}
		})
	}
}

// TestHungRedis: with Redis frozen (SIGSTOP), every call is answered
// within the store's deadline by on_failure: open lets it pass, closed
// answers OVER_LIMIT with the store's Retry-After.
func TestHungRedis(t *testing.T) {
	srv := redistest.StartServer(t)
	clk := clock.NewFake(epoch)
	open := startWith(t, rulesFrom(t, hourRules), openRedis(t, []string{srv.Addr}, redistest.KeyPrefix(t), store.FailOpen), clk, Options{})
	closed := startWith(t, rulesFrom(t, hourRules), openRedis(t, []string{srv.Addr}, redistest.KeyPrefix(t), store.FailClosed), clk,
		Options{OnStoreError: store.FailClosed})
	open.ask(request("rl", desc("foo=warm"))) // both connected before the freeze
	closed.ask(request("rl", desc("foo=warm")))
	srv.Pause()
	defer srv.Resume()
	for i := range 4 { // past the failover's threshold, its circuit opens
		if got := brief(open.ask(request("rl", desc("foo=x")))); got != "OK OK/0/0s" {
			t.Errorf("open, call %d: %q, want OK, uncounted", i, got)
		}
		resp := closed.ask(request("rl", desc("foo=x")))
		if got := brief(resp); got != "OVER_LIMIT OVER_LIMIT/0/1s" {
			t.Errorf("closed, call %d: %q, want OVER_LIMIT for the store's 1s", i, got)
		}
		if ra := headerMap(resp)["Retry-After"]; ra != "1" {
			t.Errorf("closed, call %d: Retry-After %q, want 1", i, ra)
		}
	}
}

// TestHungRedisWithinStoreBound: the store behind `sluice serve` bounds
// its decisions itself (store.Bounded: the Redis store's timeout, here
// 100ms, after a lazy store's 500ms try to connect), so the server sets
// no timeout of its own when its Timeout is longer; a call on a frozen
// Redis still ends within the store's bound, answered by on_failure.
// With a Timeout shorter than the store's bound, the server's own holds.
func TestHungRedisWithinStoreBound(t *testing.T) {
	srv := redistest.StartServer(t)
	clk := clock.NewFake(epoch)
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		bounded bool          // the server relies on the store's bound
		within  time.Duration // the call's answer comes by then
	}{
		{"store's bound", 5 * time.Second, true, 600 * time.Millisecond},
		{"server's shorter Timeout", 30 * time.Millisecond, false, 80 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := openRedis(t, []string{srv.Addr}, redistest.KeyPrefix(t), store.FailClosed)
			h := startWith(t, rulesFrom(t, hourRules), st, clk, Options{Timeout: tc.timeout, OnStoreError: store.FailClosed})
			if h.srv.storeBounded != tc.bounded {
				t.Fatalf("storeBounded %v, want %v", h.srv.storeBounded, tc.bounded)
			}
			h.ask(request("rl", desc("foo=warm"))) // connected before the freeze
			srv.Pause()
			defer srv.Resume()
			start := time.Now()
			resp := h.ask(request("rl", desc("foo=x")))
			took := time.Since(start)
			if got := brief(resp); got != "OVER_LIMIT OVER_LIMIT/0/1s" || headerMap(resp)["Retry-After"] != "1" {
				t.Errorf("got %q, Retry-After %q, want OVER_LIMIT for 1s", got, headerMap(resp)["Retry-After"])
			}
			if took > tc.within {
				t.Errorf("answered after %v, want within %v", took, tc.within)
			}
		})
	}
}
