// Command rlsload drives an Envoy rate limit service (RLS v3
// ShouldRateLimit) as Envoy does: one gRPC connection with many calls in
// flight. bench/rls.sh runs it against sluice, envoyproxy/ratelimit and
// its own no-op server.
//
//	rlsload -addr 127.0.0.1:8081 -concurrency 64 -keys 1 -duration 5s
//	rlsload -noop 127.0.0.1:8090     # serve ShouldRateLimit answering OK, until killed
//
// It prints one line: "calls=N per_s=R p99_ms=P errors=E over_limit=O".
// Each call has one descriptor of domain bench: key "key" with one of
// -keys values, in turn.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	rlv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	addr := flag.String("addr", "", "the service's gRPC address")
	noop := flag.String("noop", "", "serve a no-op ShouldRateLimit (always OK) on this address instead")
	concurrency := flag.Int("concurrency", 64, "calls in flight on the one connection")
	keys := flag.Int("keys", 1, "distinct descriptor values, asked in turn")
	duration := flag.Duration("duration", 5*time.Second, "how long to drive")
	flag.Parse()
	var err error
	switch {
	case *noop != "":
		err = serveNoop(*noop)
	case *addr == "" || *concurrency < 1 || *keys < 1 || *duration <= 0:
		err = fmt.Errorf("want -addr, and -concurrency, -keys and -duration above 0 (or -noop ADDR)")
	default:
		var r result
		if r, err = drive(*addr, *concurrency, *keys, *duration); err == nil {
			fmt.Printf("calls=%d per_s=%.0f p99_ms=%.3f errors=%d over_limit=%d\n", r.calls, r.perSecond, r.p99ms, r.errors, r.over)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "rlsload:", err)
		os.Exit(1)
	}
}

// noopServer answers every call OK, with one OK status per descriptor:
// the ceiling of what a rate limit service can answer through gRPC.
type noopServer struct {
	pb.UnimplementedRateLimitServiceServer
}

func (noopServer) ShouldRateLimit(_ context.Context, req *pb.RateLimitRequest) (*pb.RateLimitResponse, error) {
	st := make([]*pb.RateLimitResponse_DescriptorStatus, len(req.GetDescriptors()))
	for i := range st {
		st[i] = &pb.RateLimitResponse_DescriptorStatus{Code: pb.RateLimitResponse_OK}
	}
	return &pb.RateLimitResponse{OverallCode: pb.RateLimitResponse_OK, Statuses: st}, nil
}

func serveNoop(addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := newNoop()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-sig
		srv.Stop()
	}()
	return srv.Serve(ln)
}

// newNoop returns a gRPC server of noopServer.
func newNoop() *grpc.Server {
	srv := grpc.NewServer()
	pb.RegisterRateLimitServiceServer(srv, noopServer{})
	return srv
}

// result is what one drive measured.
type result struct {
	calls, errors, over int64
	perSecond, p99ms    float64
}

// drive runs concurrency callers on one connection for duration.
func drive(addr string, concurrency, keys int, duration time.Duration) (result, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return result{}, err
	}
	defer conn.Close()
	client := pb.NewRateLimitServiceClient(conn)
	reqs := make([]*pb.RateLimitRequest, keys)
	for i := range reqs {
		reqs[i] = &pb.RateLimitRequest{Domain: "bench", Descriptors: []*rlv3.RateLimitDescriptor{
			{Entries: []*rlv3.RateLimitDescriptor_Entry{{Key: "key", Value: "k" + strconv.Itoa(i)}}}}}
	}
	// Warm up: the connection, and the server's first calls.
	for i := range min(keys, 100) {
		if _, err := client.ShouldRateLimit(context.Background(), reqs[i]); err != nil {
			return result{}, fmt.Errorf("warm-up call: %w", err)
		}
	}
	var next, errs, over atomic.Int64
	lat := make([][]time.Duration, concurrency)
	deadline := time.Now().Add(duration)
	start := time.Now()
	var wg sync.WaitGroup
	for w := range concurrency {
		wg.Go(func() {
			mine := make([]time.Duration, 0, 1<<16)
			for time.Now().Before(deadline) {
				r := reqs[int(next.Add(1))%keys]
				t := time.Now()
				resp, err := client.ShouldRateLimit(context.Background(), r)
				mine = append(mine, time.Since(t))
				switch {
				case err != nil:
					errs.Add(1)
				case resp.GetOverallCode() != pb.RateLimitResponse_OK:
					over.Add(1)
				}
			}
			lat[w] = mine
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	var all []time.Duration
	for _, l := range lat {
		all = append(all, l...)
	}
	slices.Sort(all)
	p99 := time.Duration(0)
	if len(all) > 0 {
		p99 = all[len(all)*99/100]
	}
	return result{calls: int64(len(all)), errors: errs.Load(), over: over.Load(),
		perSecond: float64(len(all)) / elapsed.Seconds(), p99ms: float64(p99) / float64(time.Millisecond)}, nil
}
