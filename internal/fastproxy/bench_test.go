package fastproxy_test

import (
	"bufio"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/internal/fastproxy"
)

// BenchmarkProxy measures one request through the proxy, with fasthttp on
// both other ends (a client and an upstream that allocate next to nothing
// per request), so that allocs/op is the proxy's own:
//
//	go test -run XXX -bench Proxy -benchmem ./internal/fastproxy/
func BenchmarkProxy(b *testing.B) {
	up := serveFast(b, func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("upstream ok") })
	p := fastproxy.New(&url.URL{Scheme: "http", Host: up}, 10*time.Second)
	b.Cleanup(p.Close)
	set := []fastproxy.Field{{Name: "X-Sluice-Client", Value: "partner-a"}}
	front := serveFast(b, func(ctx *fasthttp.RequestCtx) {
		if status, detail := fastproxy.Refuse(&ctx.Request.Header); status != 0 {
			fastproxy.WriteProblem(ctx, status, detail)
			return
		}
		f := fastproxy.Forwarding{Peer: ctx.RemoteAddr().(*net.TCPAddr).AddrPort().Addr(), Set: set}
		_, _ = p.Serve(ctx, &f, fastproxy.NewBody(ctx, time.Now(), time.Time{}), nil)
	})
	client := &fasthttp.HostClient{Addr: front, MaxConns: 256,
		Dial: func(addr string) (net.Conn, error) { return net.Dial("tcp", addr) }}
	b.Cleanup(client.CloseIdleConnections)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
		req.SetRequestURI("http://" + front + "/claims/1")
		req.Header.Set("X-API-Key", "key-a")
		for pb.Next() {
			if err := client.Do(req, resp); err != nil || resp.StatusCode() != 200 {
				b.Errorf("%v %d", err, resp.StatusCode())
				return
			}
		}
	})
}

// serveFast serves h on a free port of 127.0.0.1 until the benchmark ends.
func serveFast(b testing.TB, h fasthttp.RequestHandler) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := fastproxy.NewServer(h, fastproxy.Timeouts{ReadHeader: 10 * time.Second, Idle: 10 * time.Second}, quiet{}, nil)
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(ln) }()
	b.Cleanup(func() { _ = srv.Shutdown(); <-done })
	return ln.Addr().String()
}

// BenchmarkBuild measures the request that goes on for a typical one
// (fourteen fields), with the gateway's Strip, Kept and Set, without
// sockets: go test -run '^$' -bench 'Build$' -benchmem ./internal/fastproxy/
func BenchmarkBuild(b *testing.B) {
	raw := "GET /claims/C-1?x=1 HTTP/1.1\r\nHost: api.example.com\r\nUser-Agent: bench\r\nAccept: */*\r\n" +
		"X-API-Key: k\r\nContent-Type: application/json\r\nX-Request-Id: 1\r\nX-A: 1\r\nX-B: 2\r\nX-C: 3\r\n" +
		"X-D: 4\r\nX-E: 5\r\nX-F: 6\r\nX-G: 7\r\nX-H: 8\r\n\r\n"
	var in, out fasthttp.RequestHeader
	if err := in.Read(bufio.NewReader(strings.NewReader(raw))); err != nil {
		b.Fatal(err)
	}
	f := fastproxy.Forwarding{Strip: []string{"Sluice-Loop-Mark"}, Kept: []string{"X-Api-Key"},
		Set: []fastproxy.Field{{Name: "X-Sluice-Client", Value: "partner-a"}}}
	b.ReportAllocs()
	for b.Loop() {
		out.Reset()
		f.Build(&in, &out, false)
	}
}

// BenchmarkBuildManyTokens builds the request that goes on for a caller
// whose header block (under MaxHeaderBytes) is a Connection field of
// thousands of tokens and thousands of short fields: what a caller can
// make each field's Connection check cost.
//
//	go test -run XXX -bench BuildManyTokens -benchmem ./internal/fastproxy/
func BenchmarkBuildManyTokens(b *testing.B) {
	var raw strings.Builder
	raw.WriteString("GET / HTTP/1.1\r\nHost: x\r\nConnection: ")
	for i := range 12000 {
		fmt.Fprintf(&raw, "%x,", i%4096)
	}
	raw.WriteString("\r\n")
	for i := range 3000 {
		fmt.Fprintf(&raw, "%03x:\r\n", i)
	}
	raw.WriteString("\r\n")
	var in, out fasthttp.RequestHeader
	if err := in.Read(bufio.NewReaderSize(strings.NewReader(raw.String()), fastproxy.MaxHeaderBytes)); err != nil {
		b.Fatal(err)
	}
	f := fastproxy.Forwarding{}
	b.ReportAllocs()
	for b.Loop() {
		out.Reset()
		f.Build(&in, &out, false)
	}
}
