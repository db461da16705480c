package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/gateway"
)

// newGateway builds, without serving it, a gateway for standardConfig in
// front of upstream that logs nowhere, with shutdownTimeout (0: the
// default). The caller closes it.
func newGateway(t *testing.T, upstream string, shutdownTimeout time.Duration) *gateway.Gateway {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(standardConfig, "{{UPSTREAM}}", upstream)), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Options{Config: file, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
		ShutdownTimeout: shutdownTimeout})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestRunGracefulShutdown: when Run's context ends, a request in flight
// still completes, new connections are refused, and Run returns nil.
func TestRunGracefulShutdown(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
		_, _ = io.WriteString(w, "finally")
	}))
	defer up.Close()
	g := newGateway(t, up.URL, 0)
	defer g.Close()
	ln, adm := listen(t), listen(t)
	addr := ln.Addr().String()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- g.Run(ctx, ln, adm) }()

	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	type result struct {
		status int
		body   string
		err    error
	}
	got := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/claims/1", nil)
		req.Header.Set("X-API-Key", keyA)
		resp, err := client.Do(req)
		if err != nil {
			got <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		got <- result{resp.StatusCode, string(b), err}
	}()
	select {
	case <-arrived:
	case <-time.After(5 * time.Second):
		t.Fatal("the request never reached the upstream")
	}
	cancel()
	eventually(t, "new connections to be refused while draining", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case err := <-ran:
		t.Fatalf("Run returned %v with a request in flight", err)
	default:
	}
	close(release)
	select {
	case r := <-got:
		if r.err != nil || r.status != http.StatusOK || r.body != "finally" {
			t.Errorf("in-flight request: %d %q %v, want 200 finally", r.status, r.body, r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the in-flight request did not complete")
	}
	select {
	case err := <-ran:
		if err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after the last request finished")
	}
	if c, err := net.DialTimeout("tcp", adm.Addr().String(), time.Second); err == nil {
		c.Close()
		t.Error("the admin port still accepts connections after Run returned")
	}
}

// TestRunShutdownTimeout: a request that never finishes does not keep Run
// from returning once ShutdownTimeout has passed.
func TestRunShutdownTimeout(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-release
	}))
	defer up.Close()
	defer close(release)
	g := newGateway(t, up.URL, 100*time.Millisecond)
	defer g.Close()
	ln, adm := listen(t), listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- g.Run(ctx, ln, adm) }()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	reqDone := make(chan struct{})
	go func() {
		defer close(reqDone)
		req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/claims/1", nil)
		req.Header.Set("X-API-Key", keyA)
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	<-arrived
	cancel()
	select {
	case err := <-ran:
		t.Logf("Run returned %v", err) // either way: it returned
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after ShutdownTimeout")
	}
	release <- struct{}{}
	<-reqDone
}

// TestCloseReleasesUpstreamConnections: after Run has returned and Close,
// the gateway keeps no connection to the upstream open (a program that
// embeds the gateway, or restarts it, must not accumulate idle connections
// and their goroutines).
func TestCloseReleasesUpstreamConnections(t *testing.T) {
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	up.Config.ConnState = func(c net.Conn, s http.ConnState) {
		mu.Lock()
		defer mu.Unlock()
		if s == http.StateClosed || s == http.StateHijacked {
			delete(open, c)
		} else {
			open[c] = true
		}
	}
	up.Start()
	defer up.Close()
	g := newGateway(t, up.URL, 0)
	ln, adm := listen(t), listen(t)
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- g.Run(ctx, ln, adm) }()
	client := &http.Client{Transport: &http.Transport{}}
	for range 3 {
		req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/claims/1", nil)
		req.Header.Set("X-API-Key", keyA)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	client.CloseIdleConnections()
	cancel()
	if err := <-ran; err != nil {
		t.Errorf("Run: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	deadline := time.Now().Add(2 * time.Second)
	for {
		mu.Lock()
		n := len(open)
		mu.Unlock()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d connection(s) from the gateway to the upstream still open after Run returned and Close", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A Run whose context has already ended when it starts returns: the drain
// may come before the server has begun to accept, and must not leave it
// accepting forever.
func TestRunEndedBeforeItServes(t *testing.T) {
	for range 20 {
		h := newHarness(t)
		h.writeConfig("listen: 127.0.0.1:8080\nupstream: {{UPSTREAM}}\nrules:\n  - name: all\n    match: { path: / }\n    key: ip\n    rate: 10/m\n")
		file, err := config.Load(h.path)
		if err != nil {
			t.Fatal(err)
		}
		g, err := gateway.New(gateway.Options{Config: file, Logger: slog.New(slog.DiscardHandler), Clock: h.clock})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		done := make(chan error, 1)
		ln, adm := listen(t), listen(t)
		go func() { done <- g.Run(ctx, ln, adm) }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("Run did not return: its context had ended before it served")
		}
		if err := g.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}
}
