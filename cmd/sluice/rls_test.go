package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/gateway"
)

// grpcAddr returns the Envoy gRPC address of the "sluice serving" log line.
func grpcAddr(logs string) string {
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var l struct{ Msg, Grpc string }
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "sluice serving" {
			return l.Grpc
		}
	}
	return ""
}

// With decide.grpc and envoy_config, `sluice serve` answers Envoy's
// ShouldRateLimit from envoyproxy/ratelimit's rule files, its series are
// on the admin port, and SIGHUP rereads the rule files.
func TestServeEnvoyRateLimitService(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "ratelimit")
	if err := os.Mkdir(rules, 0o700); err != nil {
		t.Fatal(err)
	}
	replace(t, filepath.Join(rules, "edge.yaml"), "domain: edge\ndescriptors:\n  - {key: remote_address, rate_limit: {unit: minute, requests_per_unit: 1}}\n")
	path := filepath.Join(dir, "sluice.yaml")
	replace(t, path, "decide:\n  grpc: 127.0.0.1:0\n  envoy_config: [ratelimit]\nadmin: 127.0.0.1:0\n"+
		"rules: [{name: public, match: {path: /public}, key: ip, rate: 1/m}]\n")
	p := startServe(t, path)
	addr := grpcAddr(p.logs.String())
	if addr == "" {
		t.Fatalf("no grpc address in the serving line:\n%s", p.logs.String())
	}
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := pb.NewRateLimitServiceClient(conn)
	ask := func(ip string) pb.RateLimitResponse_Code {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		resp, err := client.ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "edge", Descriptors: []*rlv3.RateLimitDescriptor{
			{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "remote_address", Value: ip}}}}})
		if err != nil {
			t.Fatalf("ShouldRateLimit: %v", err)
		}
		return resp.GetOverallCode()
	}
	if a, b := ask("10.0.0.1"), ask("10.0.0.1"); a != pb.RateLimitResponse_OK || b != pb.RateLimitResponse_OVER_LIMIT {
		t.Fatalf("two calls at 1/minute: %v then %v, want OK then OVER_LIMIT", a, b)
	}
	// The domain "sluice" is the file's own policy, the descriptors the request.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	public := &pb.RateLimitRequest{Domain: "sluice", Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{
		{Key: "remote_address", Value: "10.0.0.9"}, {Key: ":path", Value: "/public"}}}}}
	for i, want := range []pb.RateLimitResponse_Code{pb.RateLimitResponse_OK, pb.RateLimitResponse_OVER_LIMIT} {
		resp, err := client.ShouldRateLimit(ctx, public)
		if err != nil || resp.GetOverallCode() != want {
			t.Fatalf("policy call %d: %v %v, want %v", i, resp.GetOverallCode(), err, want)
		}
	}
	c := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	metrics := fetch(t, c, http.MethodGet, "http://"+p.admin+"/metrics", "").body
	if !strings.Contains(metrics, `sluice_rls_descriptors_total{decision="over_limit",descriptor="remote_address",domain="edge"} 1`) {
		t.Errorf("/metrics has no over_limit for edge's remote_address:\n%s", metrics)
	}

	replace(t, filepath.Join(rules, "edge.yaml"), "domain: edge\ndescriptors:\n  - {key: remote_address, rate_limit: {unit: minute, requests_per_unit: 100}}\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll(t, "the new rule files (100/minute)", func() bool {
		return ask("10.0.0.2") == pb.RateLimitResponse_OK && ask("10.0.0.2") == pb.RateLimitResponse_OK
	})
	conn.Close()
	p.terminate(t, 10*time.Second)
}

// TestCheckEnvoyRuleFiles: `sluice check` reads decide.envoy_config's rule
// files as serve will, and reports their problems at file:line:col.
func TestCheckEnvoyRuleFiles(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "edge.yaml")
	replace(t, rules, "domain: edge\ndescriptors:\n  - {key: remote_address, rate_limit: {unit: minutes, requests_per_unit: 1}}\n")
	path := filepath.Join(dir, "sluice.yaml")
	replace(t, path, "decide:\n  grpc: 127.0.0.1:8081\n  envoy_config: [edge.yaml]\nrules: []\n")
	code, _, errs := runCmd("check", "--config", path)
	if want := rules + `:3:46: descriptors[0].rate_limit.unit: unknown unit "minutes"`; code != 1 || !strings.HasPrefix(errs, want) {
		t.Fatalf("exit %d, stderr %q; want 1 and %q", code, errs, want)
	}
	replace(t, rules, "domain: edge\ndescriptors:\n  - {key: remote_address, rate_limit: {unit: minute, requests_per_unit: 1}}\n")
	if code, out, errs := runCmd("check", "--config", path); code != 0 {
		t.Fatalf("a good rule file: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}

// TestGRPCIdleConnectionsDoNotLockOut (issue 15 item 1): with
// max_connections taken by connections that sent the HTTP/2 preface and
// SETTINGS and then no call, the gRPC port closes them at idle_timeout,
// and a new client is answered. (rls's TestConnectionAttacks has the
// other bounds.)
func TestGRPCIdleConnectionsDoNotLockOut(t *testing.T) {
	cfg, err := config.Parse("t.yaml", []byte("server:\n  max_connections: 2\n  idle_timeout: 1s\n  read_header_timeout: 1s\n"+
		"decide:\n  grpc: 127.0.0.1:0\nadmin: 127.0.0.1:0\nrules:\n  - {name: all, match: {path: /}, rate: 10/m}\n"))
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
	s := svcs[0]
	errc := make(chan error, 1)
	go func() { errc <- s.run() }()
	defer func() {
		if err := stopAll(context.Background(), svcs); err != nil {
			t.Error(err)
		}
		if err := <-errc; err != nil {
			t.Error(err)
		}
	}()
	for range 2 {
		c, err := net.Dial("tcp", s.ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if _, err := io.WriteString(c, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00"); err != nil {
			t.Fatal(err)
		}
	}
	conn, err := grpc.NewClient(s.ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := pb.NewRateLimitServiceClient(conn).ShouldRateLimit(ctx, &pb.RateLimitRequest{Domain: "edge",
		Descriptors: []*rlv3.RateLimitDescriptor{{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "k", Value: "v"}}}}})
	if err != nil || resp.GetOverallCode() != pb.RateLimitResponse_OK {
		t.Fatalf("a new client beside max_connections idle ones: %v %v, want OK", resp.GetOverallCode(), err)
	}
}

// TestCheckEnvoyRuleFilesGossip: with store type gossip, `sluice check`
// refuses a rule file's algorithm the gossip store does not keep, at its
// file:line:col, naming those it does; serve refuses it at start.
func TestCheckEnvoyRuleFilesGossip(t *testing.T) {
	dir := t.TempDir()
	rules := filepath.Join(dir, "edge.yaml")
	replace(t, rules, "domain: edge\ndescriptors:\n  - {key: remote_address, rate_limit: {unit: minute, requests_per_unit: 9, algorithm: gcra}}\n")
	path := filepath.Join(dir, "sluice.yaml")
	replace(t, path, "store: {type: gossip, gossip: {bind: 127.0.0.1:0, join: [127.0.0.1:1]}}\n"+
		"decide:\n  grpc: 127.0.0.1:0\n  envoy_config: [edge.yaml]\nadmin: 127.0.0.1:0\nrules: []\n")
	want := rules + ":3:87: descriptors[0].rate_limit.algorithm: gcra is not kept by store type gossip, whose bound holds for counts that add up across instances (accepted: fixed_window or sliding_window"
	if code, _, errs := runCmd("check", "--config", path); code != 1 || !strings.HasPrefix(errs, want) {
		t.Fatalf("check: exit %d, stderr %q; want 1 and %q", code, errs, want)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	g, err := gateway.New(gateway.Options{Config: cfg, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if svcs, err := listenDecide(cfg, g, log); err == nil || !strings.HasPrefix(err.Error(), want) {
		closeAll(svcs)
		t.Fatalf("serve's decide.grpc: %v; want %q", err, want)
	}
	replace(t, rules, "domain: edge\ndescriptors:\n  - {key: remote_address, rate_limit: {unit: minute, requests_per_unit: 9, algorithm: sliding_window}}\n")
	if code, out, errs := runCmd("check", "--config", path); code != 0 {
		t.Fatalf("sliding_window: exit %d, stdout %q, stderr %q", code, out, errs)
	}
}
