// Command transport is one of the HTTP/1.1 servers bench/transport.sh
// measures beside nginx: it answers every request with a fixed 429, or,
// with -upstream, forwards it to one upstream on a fasthttp.HostClient.
//
//	transport -server gnet -addr 127.0.0.1:9000
//	transport -server fasthttp-gw -addr 127.0.0.1:9000 -upstream 127.0.0.1:9001
//
// Servers: fasthttp (fasthttp.Server defaults), fasthttp-gw (the gateway's
// settings: ReadBufferSize 64 KiB, bodies streamed), fasthttp-reduce
// (fasthttp-gw with ReduceMemoryUsage), gnet (github.com/panjf2000/gnet/v2
// event loops feeding fasthttp's request header parser; 429 only), nbio
// (github.com/lesismal/nbio's nbhttp server).
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/valyala/fasthttp"
)

// body is the fixed rejection's body, as nginx's `return 429` in
// bench/transport.sh sends it.
const body = "too many requests\n"

func main() {
	server := flag.String("server", "fasthttp", "fasthttp | fasthttp-gw | fasthttp-reduce | gnet | nbio")
	addr := flag.String("addr", "127.0.0.1:9000", "address to listen on")
	upstream := flag.String("upstream", "", "host:port to forward every request to; empty: answer 429")
	flag.Parse()
	var hc *fasthttp.HostClient
	if *upstream != "" {
		hc = &fasthttp.HostClient{Addr: *upstream, MaxConns: 4096, MaxIdleConnDuration: 90 * time.Second,
			NoDefaultUserAgentHeader: true, DisablePathNormalizing: true, DisableHeaderNamesNormalizing: true}
	}
	var err error
	switch *server {
	case "fasthttp", "fasthttp-gw", "fasthttp-reduce":
		err = serveFasthttp(*server, *addr, hc)
	case "gnet":
		if hc != nil {
			err = fmt.Errorf("gnet: -upstream is not built in this spike")
			break
		}
		err = serveGnet(*addr)
	case "nbio":
		err = serveNbio(*addr, hc)
	default:
		err = fmt.Errorf("unknown -server %q", *server)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "transport:", err)
		os.Exit(1)
	}
}

// serveFasthttp serves on a fasthttp.Server configured as variant says.
func serveFasthttp(variant, addr string, hc *fasthttp.HostClient) error {
	s := &fasthttp.Server{NoDefaultServerHeader: true, NoDefaultContentType: true}
	if variant != "fasthttp" { // as internal/fastproxy.NewServer
		s.ReadBufferSize = 64 << 10
		s.StreamRequestBody = true
		s.MaxRequestBodySize = 1
		s.DisablePreParseMultipartForm = true
		s.ReduceMemoryUsage = variant == "fasthttp-reduce"
	}
	s.Handler = func(ctx *fasthttp.RequestCtx) {
		_ = ctx.Request.Header.Peek("X-Api-Key")
		if hc == nil {
			ctx.SetStatusCode(fasthttp.StatusTooManyRequests)
			ctx.SetContentType("text/plain")
			ctx.SetBodyString(body)
			return
		}
		ctx.Request.Header.Del("Connection")
		if err := hc.Do(&ctx.Request, &ctx.Response); err != nil {
			ctx.Error("bad gateway", fasthttp.StatusBadGateway)
		}
		ctx.Response.Header.Del("Connection")
	}
	return s.ListenAndServe(addr)
}
