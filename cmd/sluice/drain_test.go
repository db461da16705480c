package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/gateway"
)

// The decision service alone stops gracefully: once told to stop,
// /readyz answers 503 while a question in flight is still answered, and
// runServices returns nil after it.
func TestDecisionServiceDrains(t *testing.T) {
	cfg, err := config.Parse("t.yaml", []byte(decideText("10/m")))
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	arrived, release := make(chan struct{}), make(chan struct{})
	slow := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(arrived)
		<-release
		w.WriteHeader(http.StatusOK)
	})}
	ln, adm := listenLoopback(t), listenLoopback(t)
	svc := service{name: "slow", ln: ln, serve: httpServe(slow), stop: slow.Shutdown}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runServices(ctx, cfg, g, nil, adm, []service{svc}) }()

	c := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	answered := make(chan int, 1)
	go func() {
		resp, err := c.Get("http://" + ln.Addr().String() + "/check")
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	<-arrived
	cancel()
	poll(t, "/readyz 503 while stopping", func() bool {
		return fetch(t, c, http.MethodGet, "http://"+adm.Addr().String()+"/readyz", "").status == http.StatusServiceUnavailable
	})
	select {
	case err := <-done:
		t.Fatalf("runServices returned (%v) with a question in flight", err)
	default:
	}
	close(release)
	if code := <-answered; code != http.StatusOK {
		t.Errorf("the question in flight got %d, want 200", code)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("runServices: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("runServices did not return within 10s of the last answer")
	}
}

func listenLoopback(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestDecisionServiceDrainTimeoutZero: drain_timeout 0 (allowed, as at the
// gateway) lets no question in flight hold the decision service's stop:
// runServices returns at once with the unclean drain, not after the
// default 10s.
func TestDecisionServiceDrainTimeoutZero(t *testing.T) {
	cfg, err := config.Parse("t.yaml", []byte(decideText("10/m")+"server:\n  drain_timeout: 0s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Server.DrainTimeout != 0 {
		t.Fatalf("drain_timeout read as %v, want 0", cfg.Server.DrainTimeout)
	}
	g, err := gateway.New(gateway.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	arrived, release := make(chan struct{}), make(chan struct{})
	slow := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		close(arrived)
		<-release
		w.WriteHeader(http.StatusOK)
	})}
	ln, adm := listenLoopback(t), listenLoopback(t)
	svc := service{name: "slow", ln: ln, serve: httpServe(slow), stop: slow.Shutdown}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runServices(ctx, cfg, g, nil, adm, []service{svc}) }()
	c := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		if resp, err := c.Get("http://" + ln.Addr().String() + "/check"); err == nil {
			resp.Body.Close()
		}
	}()
	defer func() { <-answered }()
	defer close(release)
	<-arrived
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("runServices: %v, want the drain's deadline exceeded", err)
		}
	case <-time.After(5 * time.Second): // an upper bound: the default drain would take 10s
		t.Fatal("runServices still waits for the question in flight with drain_timeout 0")
	}
}
