package rls

import (
	"context"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
)

// TestMain checks for leaked goroutines; rueidis's cluster client leaves
// one sleeping out a topology refresh after Close, as in store/redis's tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/redis/rueidis.(*clusterClient)._refresh.func2"))
}

// epoch is a time on a whole hour, so that every window of the tests
// starts there.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// harness is a Server on 127.0.0.1 over a memory store on a fake clock,
// and a gRPC client connected to it.
type harness struct {
	t      *testing.T
	clk    *clock.Fake
	srv    *Server
	client pb.RateLimitServiceClient
	conn   *grpc.ClientConn
	reg    *prometheus.Registry
}

// rulesFrom compiles rule files given as text.
func rulesFrom(t testing.TB, files ...string) *Rules {
	t.Helper()
	var doms []config.EnvoyDomain
	for i, f := range files {
		d, err := config.ParseEnvoy("rules"+string(rune('0'+i))+".yaml", []byte(f))
		if err != nil {
			t.Fatal(err)
		}
		doms = append(doms, *d)
	}
	return Compile(doms)
}

func start(t *testing.T, rules *Rules) *harness {
	t.Helper()
	clk := clock.NewFake(epoch)
	st := memory.New(memory.Options{Clock: clk})
	return startWith(t, rules, st, clk, Options{})
}

// startWith serves opts with rules, st and clk filled in.
func startWith(t *testing.T, rules *Rules, st store.Store, clk *clock.Fake, opts Options) *harness {
	t.Helper()
	reg := prometheus.NewRegistry()
	opts.Store, opts.Rules, opts.Clock, opts.Registerer = st, rules, clk, reg
	opts.Logger = slog.New(slog.DiscardHandler)
	srv, err := NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	conn, err := grpc.NewClient(l.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = conn.Close()
		srv.GracefulStop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
		_ = st.Close()
	})
	return &harness{t: t, clk: clk, srv: srv, client: pb.NewRateLimitServiceClient(conn), conn: conn, reg: reg}
}

// ask sends a request and fails the test on a gRPC error.
func (h *harness) ask(req *pb.RateLimitRequest) *pb.RateLimitResponse {
	h.t.Helper()
	resp, err := h.call(req)
	if err != nil {
		h.t.Fatalf("ShouldRateLimit: %v", err)
	}
	return resp
}

func (h *harness) call(req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return h.client.ShouldRateLimit(ctx, req)
}

// desc builds a descriptor from "key=value" entries.
func desc(entries ...string) *rlv3.RateLimitDescriptor {
	d := &rlv3.RateLimitDescriptor{}
	for _, e := range entries {
		k, v, _ := strings.Cut(e, "=")
		d.Entries = append(d.Entries, &rlv3.RateLimitDescriptor_Entry{Key: k, Value: v})
	}
	return d
}

func request(domain string, descs ...*rlv3.RateLimitDescriptor) *pb.RateLimitRequest {
	return &pb.RateLimitRequest{Domain: domain, Descriptors: descs}
}

// brief writes a response as one line: overall code, then per descriptor
// code/remaining/reset (or "-" for no current limit), the way the compat
// tables write envoyproxy/ratelimit's answers.
func brief(resp *pb.RateLimitResponse) string {
	var b strings.Builder
	b.WriteString(resp.GetOverallCode().String())
	for _, st := range resp.GetStatuses() {
		b.WriteString(" ")
		b.WriteString(st.GetCode().String())
		if st.GetCurrentLimit() == nil {
			if st.GetLimitRemaining() != 0 {
				b.WriteString("/unlimited")
			}
			continue
		}
		b.WriteString("/" + itoa(int64(st.GetLimitRemaining())) + "/" + itoa(st.GetDurationUntilReset().GetSeconds()) + "s")
	}
	return b.String()
}

// headerMap returns the response's headers to add by name.
func headerMap(resp *pb.RateLimitResponse) map[string]string {
	m := map[string]string{}
	for _, h := range resp.GetResponseHeadersToAdd() {
		m[h.GetKey()] = h.GetValue()
	}
	return m
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
