package gateway_test

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/store/gossip"
)

// gossipConfig is a gateway on the gossip store at bind, joining join: one
// rule of 60 an hour for everyone (one caller here: loopback).
const gossipConfig = `listen: 127.0.0.1:18080
upstream: {{UPSTREAM}}
store: {type: gossip, gossip: {bind: %s, join: [%s], interval: 20ms, max_unsynced: 5}}
rules:
  - { name: hourly, algorithm: %s, rate: 60/h }
`

// TestGossipGateways serves gateways on the gossip store, one caller's
// requests round robin over them: admitted stays within the stated bound,
// limit + (gateways − 1) × max_unsynced, and reaches the limit; once the
// gateways stop, no goroutine is left.
func TestGossipGateways(t *testing.T) {
	for _, tc := range []struct {
		alg      string
		gateways int
	}{{"fixed_window", 2}, {"sliding_window", 2}, {"fixed_window", 3}} {
		t.Run(tc.alg+"/"+strconv.Itoa(tc.gateways), func(t *testing.T) {
			const limit, maxUnsynced, requests = 60, 5, 600
			addrs := make([]string, tc.gateways)
			for i := range addrs {
				addrs[i] = freeGossipAddr(t)
			}
			var hs []*harness
			for i := range addrs {
				join := strings.Join(append(append([]string{}, addrs[:i]...), addrs[i+1:]...), ", ")
				hs = append(hs, startGateway(t, fmt.Sprintf(gossipConfig, addrs[i], join, tc.alg)))
			}
			for i, h := range hs {
				eventually(t, fmt.Sprintf("gateway %d knows %d members", i, len(hs)), func() bool {
					return metric(h.metrics(), "sluice_gossip_members") == float64(len(hs))
				})
			}
			admitted, waited := 0, 0
			for i := range requests {
				switch r := hs[i%len(hs)].get("/claims", ""); r.Status {
				case http.StatusOK:
					admitted++
				case http.StatusTooManyRequests:
					if r.Header.Get("Retry-After") == "1" { // waits for the next exchange (20ms, rounded up)
						waited++
					}
				default:
					t.Fatalf("request %d: %d %s", i, r.Status, r.Body)
				}
				time.Sleep(time.Millisecond) // let exchanges happen during the burst
			}
			bound := limit + (len(hs)-1)*maxUnsynced
			t.Logf("%d gateways, %d requests: %d admitted (bound %d), %d waited for an exchange", len(hs), requests, admitted, bound, waited)
			if admitted > bound || admitted < limit {
				t.Errorf("admitted %d, want %d to %d", admitted, limit, bound)
			}
			if got := int(hs[0].up.hits.Load()); got != admitted {
				for _, h := range hs[1:] {
					got += int(h.up.hits.Load())
				}
				if got != admitted {
					t.Errorf("the upstreams received %d, admitted %d", got, admitted)
				}
			}
			for _, h := range hs {
				h.stop()
				h.up.srv.Close()
			}
			goleak.VerifyNone(t, fasthttpLingering()...)
		})
	}
}

// freeGossipAddr returns a loopback host:port free for TCP and UDP now.
func freeGossipAddr(t *testing.T) string {
	t.Helper()
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		pc, err := net.ListenPacket("udp", addr)
		_ = ln.Close()
		if err == nil {
			_ = pc.Close()
			return addr
		}
	}
	t.Fatal("no loopback port free for TCP and UDP")
	return ""
}

// TestReloadGossipStore: a changed store.gossip block takes effect after a
// restart, as any store change: the reload logs so and the running store
// keeps its address and timers. A reload that changes the store to another
// type is checked against the gossip store still running, so a rule it
// does not keep (token_bucket) is refused, not failed at each request.
func TestReloadGossipStore(t *testing.T) {
	bind, join := freeGossipAddr(t), freeGossipAddr(t)
	h := startGateway(t, fmt.Sprintf(gossipConfig, bind, join, "fixed_window"))
	gs, ok := h.g.Store().(*gossip.Store)
	if !ok {
		t.Fatalf("the store is a %T, want *gossip.Store", h.g.Store())
	}
	h.writeConfig(fmt.Sprintf("listen: 127.0.0.1:18080\nupstream: {{UPSTREAM}}\n"+
		"store: {type: gossip, gossip: {bind: %s, join: [%s], interval: 40ms, max_unsynced: 7}}\n"+
		"rules:\n  - { name: hourly, algorithm: fixed_window, rate: 60/h }\n", freeGossipAddr(t), join))
	if err := h.g.Reload(); err != nil {
		t.Fatal(err)
	}
	if n := h.logs.count(t, "listen, admin, server, store, runtime and access_log changes take effect after a restart"); n != 1 {
		t.Errorf("%d restart warnings, want 1:\n%s", n, h.logs)
	}
	if gs.Addr() != bind || gs.Interval() != 20*time.Millisecond || gs.MaxUnsynced() != 5 {
		t.Errorf("after the reload the store gossips on %s every %v, max_unsynced %d; want %s, 20ms, 5 until a restart",
			gs.Addr(), gs.Interval(), gs.MaxUnsynced(), bind)
	}

	h.writeConfig("listen: 127.0.0.1:18080\nupstream: {{UPSTREAM}}\nstore: {type: memory}\n" +
		"rules:\n  - { name: hourly, algorithm: token_bucket, rate: 60/h }\n")
	err := h.g.Reload()
	if want := "rules[0].algorithm: rule hourly: token_bucket is not kept by store type gossip, running until a restart,"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("reload to memory with token_bucket: %v; want an error with %q", err, want)
	}
	admitted := 0
	for range 100 {
		if r := h.get("/claims", ""); r.Status == http.StatusOK {
			admitted++
		}
	}
	if admitted != 60 {
		t.Errorf("after the refused reload %d of 100 admitted, want the 60 of the rule in force", admitted)
	}
}
