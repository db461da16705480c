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
