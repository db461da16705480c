package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/gateway"
)

// decideText is a configuration of the decision service alone: /check and
// the admin port on ports the kernel chooses, the claims rule at rate.
func decideText(rate string) string {
	return `decide:
  http: 127.0.0.1:0
  http_deny_status: 403
admin: 127.0.0.1:0
clients:
  list:
    - {id: partner-a, keys: [cmd-secret-key-a-91c2]}
rules:
  - {name: claims, match: {path: /claims}, algorithm: fixed_window, rate: ` + rate + `}
`
}

// checkAddr returns the /check address of the "sluice serving" log line.
func checkAddr(logs string) string {
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var l struct{ Msg, Check string }
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "sluice serving" {
			return l.Check
		}
	}
	return ""
}

// askCheck asks /check at addr about GET uri for the caller with key.
func askCheck(t *testing.T, c *http.Client, addr, uri, key string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/check", nil)
	req.Header.Set("X-Original-Method", "GET")
	req.Header.Set("X-Original-URI", uri)
	req.Header.Set("X-API-Key", key)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("/check: %v", err)
	}
	resp.Body.Close()
	return resp
}

// With decide and no upstream, `sluice serve` runs the decision service
// alone: /check answers, the admin port has metrics and health, a reload
// puts a new policy in force, SIGTERM ends it with exit status 0.
func TestServeDecideAlone(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	replace(t, path, decideText("2/m"))
	p := startServe(t, path)
	addr := checkAddr(p.logs.String())
	if p.listen != "" || addr == "" {
		t.Fatalf("serving line: listen %q, check %q", p.listen, addr)
	}
	c := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	for i := range 2 {
		if r := askCheck(t, c, addr, "/claims/7", "cmd-secret-key-a-91c2"); r.StatusCode != 200 || r.Header.Get("X-Sluice-Client") != "partner-a" {
			t.Fatalf("question %d: %d, client %q", i, r.StatusCode, r.Header.Get("X-Sluice-Client"))
		}
	}
	r := askCheck(t, c, addr, "/claims/7", "cmd-secret-key-a-91c2")
	if r.StatusCode != 403 || r.Header.Get("Retry-After") == "" || !strings.Contains(r.Header.Get("X-Sluice-Problem"), `"status":429`) {
		t.Errorf("over the limit: %d, Retry-After %q, problem %q", r.StatusCode, r.Header.Get("Retry-After"), r.Header.Get("X-Sluice-Problem"))
	}
	if r := fetch(t, c, http.MethodGet, "http://"+p.admin+"/readyz", ""); r.status != 200 {
		t.Errorf("/readyz: %d", r.status)
	}
	metrics := fetch(t, c, http.MethodGet, "http://"+p.admin+"/metrics", "").body
	if !strings.Contains(metrics, `client="partner-a"`) {
		t.Errorf("/metrics names no partner-a:\n%s", metrics)
	}

	replace(t, path, decideText("5/m"))
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll(t, "the new policy (q=5)", func() bool {
		return askCheck(t, c, addr, "/claims/1", "cmd-secret-key-a-91c2").Header.Get("RateLimit-Policy") == `"claims";q=5;w=60`
	})

	c.CloseIdleConnections()
	p.terminate(t, 10*time.Second)
}

// Beside the gateway, /check shares its counters. A reload with a file
// that has no upstream keeps the gateway proxying (a restart is needed to
// stop it) rather than proxying to no address.
func TestServeDecideBesideGateway(t *testing.T) {
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprint(w, "claims")
	}))
	t.Cleanup(up.Close)
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	replace(t, path, "listen: 127.0.0.1:0\nupstream: "+up.URL+"\n"+decideText("100/m"))
	p := startServe(t, path)
	addr := checkAddr(p.logs.String())
	c := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	if r := fetch(t, c, http.MethodGet, "http://"+p.listen+"/claims/1", "cmd-secret-key-a-91c2"); r.status != 200 {
		t.Fatalf("through the gateway: %d", r.status)
	}
	if r := askCheck(t, c, addr, "/claims/2", "cmd-secret-key-a-91c2"); !strings.HasPrefix(r.Header.Get("RateLimit"), `"claims";r=98`) {
		t.Errorf("/check after one request through the gateway: RateLimit %q, want r=98", r.Header.Get("RateLimit"))
	}

	replace(t, path, decideText("100/m"))
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll(t, "the reload", func() bool { return reloads(t, c, p.admin, "ok") == "1" })
	if r := fetch(t, c, http.MethodGet, "http://"+p.listen+"/claims/3", "cmd-secret-key-a-91c2"); r.status != 200 || r.body != "claims" {
		t.Errorf("after a reload without upstream: %d %q, want the upstream's 200", r.status, r.body)
	}
	if !strings.Contains(p.logs.String(), "decide changes, and adding or removing upstream, take effect after a restart") {
		t.Error("the reload did not say that removing upstream needs a restart")
	}
}

// TestDecideStartFailureLeavesNothing: when sluice cannot listen on an
// address of decide.grpc, admin or listen, the decision services already
// made are stopped, the Envoy server's stream workers with them, and
// nothing is left listening.
func TestDecideStartFailureLeavesNothing(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	t.Setenv("GOGC", "100") // serveConfig leaves the collector's target alone
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	log := slog.New(slog.DiscardHandler)
	parse := func(grpc, admin string) *config.File {
		cfg, err := config.Parse("t.yaml", []byte("decide:\n  http: 127.0.0.1:0\n  grpc: "+grpc+"\nadmin: "+admin+
			"\nrules:\n  - {name: all, match: {path: /}, rate: 10/m}\n"))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	cfg := parse(taken.Addr().String(), "127.0.0.1:0")
	g, err := gateway.New(gateway.Options{Config: cfg, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := listenDecide(cfg, g, log); err == nil || !strings.Contains(err.Error(), "decide.grpc listen") {
		t.Errorf("decide.grpc taken: %v, want a listen error", err)
	}
	if err := g.Close(); err != nil {
		t.Error(err)
	}
	if err := serveConfig(parse("127.0.0.1:0", taken.Addr().String()), log); err == nil || !strings.Contains(err.Error(), "admin listen") {
		t.Errorf("admin taken: %v, want a listen error", err)
	}
}

// TestDecideConnectionsCapped: server.max_connections caps /check's and
// Envoy's gRPC connections as it caps the gateway's: with the one slot
// taken, a second connection is not served (it waits in the kernel's
// backlog) until the first closes.
func TestDecideConnectionsCapped(t *testing.T) {
	cfg, err := config.Parse("t.yaml", []byte("server:\n  max_connections: 1\ndecide:\n  http: 127.0.0.1:0\n  grpc: 127.0.0.1:0\n"+
		"admin: 127.0.0.1:0\nrules:\n  - {name: all, match: {path: /}, rate: 10/m}\n"))
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	g, err := gateway.New(gateway.Options{Config: cfg, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	svcs, err := listenDecide(cfg, g, log)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, len(svcs))
	for _, s := range svcs {
		go func() { errc <- s.run() }()
	}
	defer func() {
		if err := stopAll(context.Background(), svcs); err != nil {
			t.Error(err)
		}
		for range svcs {
			if err := <-errc; err != nil {
				t.Error(err)
			}
		}
	}()
	greetings := map[string]string{ // what each service's first connection sends
		"check": "GET /check HTTP/1.1\r\nHost: x\r\nX-Original-Method: GET\r\nX-Original-URI: /\r\n\r\n",
		"grpc":  "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00",
	}
	for _, s := range svcs {
		var conns [2]net.Conn
		for i := range conns {
			c, err := net.Dial("tcp", s.ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, greetings[s.name]); err != nil {
				t.Fatal(err)
			}
			conns[i] = c
		}
		if !answers(conns[0], 10*time.Second) {
			t.Errorf("%s: the first connection got no answer", s.name)
		}
		if answers(conns[1], 200*time.Millisecond) {
			t.Errorf("%s: a second connection was answered beyond max_connections 1", s.name)
		}
		conns[0].Close()
		if !answers(conns[1], 10*time.Second) {
			t.Errorf("%s: the second connection got no answer once the first closed", s.name)
		}
	}
}

// answers reports whether c receives a byte within d.
func answers(c net.Conn, d time.Duration) bool {
	_ = c.SetReadDeadline(time.Now().Add(d))
	var b [1]byte
	_, err := c.Read(b[:])
	return err == nil
}
