package gateway_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/gateway"
)

// BenchmarkRun measures one request through Run (the fast data path) from
// a fasthttp client to a fasthttp upstream, both allocating next to
// nothing per request, so that allocs/op is the gateway's own: one key's
// rule so generous that every request passes (Allowed) or, at 1/d, every
// request but the first is answered 429 (Rejected).
//
//	go test -run XXX -bench Run -benchmem ./gateway/
func BenchmarkRun(b *testing.B) {
	for _, c := range []struct{ name, algorithm, rate string }{
		{"Allowed", "gcra", "1000000000/s"},
		{"Rejected", "fixed_window", "1/d"},
	} {
		b.Run(c.name, func(b *testing.B) { benchRun(b, c.algorithm, c.rate, nil) })
	}
}

// BenchmarkRunAccessLog is BenchmarkRun with an access log written to a
// file (every request logged), to set beside BenchmarkRun's: what the
// log costs the data path.
//
//	go test -run XXX -bench 'Run(AccessLog)?/' -benchmem ./gateway/
func BenchmarkRunAccessLog(b *testing.B) {
	for _, c := range []struct{ name, algorithm, rate string }{
		{"Allowed", "gcra", "1000000000/s"},
		{"Rejected", "fixed_window", "1/d"},
	} {
		b.Run(c.name, func(b *testing.B) { benchRunFile(b, c.algorithm, c.rate, "access_log: {path: access.log}\n", nil) })
	}
}

// BenchmarkRunConnectionTokens is BenchmarkRun/Allowed for a request of
// some 58 KB: one X-Pad field of 5,000 names (Plain); a Connection field
// listing them (Tokens: refused, 400, past fastproxy.MaxConnectionNames),
// what a caller can make one request's Connection field cost the gateway;
// and a Connection field listing 32 of them beside the X-Pad field
// (Tokens32, passed).
//
//	go test -run XXX -bench RunConnectionTokens -benchmem -cpu 1 ./gateway/
func BenchmarkRunConnectionTokens(b *testing.B) {
	toks := make([]string, 5000)
	for i := range toks {
		toks[i] = fmt.Sprintf("x-%06d", i)
	}
	all, first32 := strings.Join(toks, ", "), strings.Join(toks[:32], ", ")
	for _, c := range []struct {
		name   string
		fields []string
	}{
		{"Plain", []string{"X-Pad", all}},
		{"Tokens", []string{"Connection", all}},
		{"Tokens32", []string{"X-Pad", all, "Connection", first32}},
	} {
		b.Run(c.name, func(b *testing.B) {
			benchRun(b, "gcra", "1000000000/s", func(h *fasthttp.RequestHeader) {
				for i := 0; i < len(c.fields); i += 2 {
					h.Set(c.fields[i], c.fields[i+1])
				}
			})
		})
	}
}

func benchRun(b *testing.B, algorithm, rate string, header func(*fasthttp.RequestHeader)) {
	benchRunFile(b, algorithm, rate, "", header)
}

// benchRunFile is benchRun with more settings appended to the file.
func benchRunFile(b *testing.B, algorithm, rate, more string, header func(*fasthttp.RequestHeader)) {
	up := serveBench(b)
	dir := b.TempDir()
	path := filepath.Join(dir, "sluice.yaml")
	cfg := "listen: 127.0.0.1:1\nupstream: http://" + up + "\nclients:\n  key_header: X-API-Key\n  unknown: reject\n" +
		"  list:\n    - id: partner-a\n      keys: [key-a]\nrules:\n  - name: bench\n    match: { path: / }\n" +
		"    key: client\n    algorithm: " + algorithm + "\n    rate: " + rate + "\n" + more
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		b.Fatal(err)
	}
	file, err := config.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	g, err := gateway.New(gateway.Options{Config: file, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	ln, adm := listenBench(b), listenBench(b)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx, ln, adm) }()
	b.Cleanup(func() { cancel(); <-done; _ = g.Close() })
	client := &fasthttp.HostClient{Addr: ln.Addr().String(), MaxConns: 256,
		Dial: func(addr string) (net.Conn, error) { return net.Dial("tcp", addr) }}
	b.Cleanup(client.CloseIdleConnections)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://" + ln.Addr().String() + "/claims/1")
		req.Header.Set("X-API-Key", "key-a")
		if header != nil {
			header(&req.Header)
		}
		for pb.Next() {
			if err := client.Do(req, resp); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func serveBench(b *testing.B) string {
	ln := listenBench(b)
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("upstream ok") }}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Shutdown(); <-done })
	return ln.Addr().String()
}

func listenBench(b *testing.B) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	return ln
}
