// Package fastproxy is the gateway's HTTP/1.1 transport on fasthttp: a
// server for callers that streams request bodies, over connections of its
// own (capped in number, each write of an answer bounded, header blocks
// watched for a bare-LF end, idle ones parked without a goroutine:
// CapConnections, StallWrites, NewParking; a held request's caller
// noticed leaving: WatchGone), so that no read or write on a caller's
// connection leaves this package, a pooled keep-alive
// client for the upstream that streams response bodies, the checks that
// refuse what fasthttp's parser accepts and net/http does not (Refuse),
// and the header rules of a reverse proxy (hop-by-hop fields, the
// forwarding headers, the fields a caller may not remove), and protocol
// upgrades (WebSocket) on a connection of their own (Proxy.Upgrade,
// Tunnel.Splice). It decides
// nothing about limits: the front (internal/fastfront) asks the decision
// core first and hands a passed request to Proxy.Serve.
//
// It is a leaf: it imports the standard library, fasthttp and internal
// packages that import no sluice package (internal/httpname: the
// hop-by-hop fields, header names an upstream reads as one, the clean
// host; internal/problem: the problem+json body; internal/idlepark: the
// parker of idle connections), never the policy or the
// decision core. What it needs of them is handed in as plain values
// (Forwarding: the peer, whether it is trusted, which forwarding header is
// read, the fields removed, stripped, kept and set; Proxy.StripResponse),
// so that a request served calls back into the front once, when its
// answer has gone (Serve's and Upgrade's done, told why a body broke off),
// however many fields it has. TestLeaf holds it to the imports.
package fastproxy

import (
	"errors"
	"net"
	"time"

	"github.com/valyala/fasthttp"
)

// MaxHeaderBytes bounds a request's line and header fields, as net/http's
// Server.MaxHeaderBytes did before: longer ones are answered 431.
const MaxHeaderBytes = 64 << 10

// Timeouts are the server block's timeouts (config.Server).
type Timeouts struct {
	// ReadHeader bounds the wait for a request's line and headers, counted
	// from the connection's start or, on a kept-alive connection, from the
	// request's first byte.
	ReadHeader time.Duration
	// Idle bounds the wait for the next request on a kept-alive connection.
	Idle time.Duration
}

// NewServer returns a fasthttp server for callers: bodies streamed to the
// handler (ctx.RequestBodyStream), never buffered whole; multipart bodies
// never parsed; no Server header and no default Content-Type added to what
// the upstream answered; Connection: close on answers while shutting down.
// A request fasthttp cannot parse is answered with a problem+json body
// (400, 431 for headers over MaxHeaderBytes, 408 for headers too slow;
// 400 for a read failed with ErrBareLFEnd).
// Body timeouts are the handler's: SetBodyDeadline.
//
// The server watches the header blocks of the connections StallWrites
// hands it: its ConnState does, and its handler notes, before h runs,
// that the header block has been read. conns, if set, is told of each
// connection's opening, closing and hijacking, never of its requests
// (ConnState's other states).
func NewServer(h fasthttp.RequestHandler, t Timeouts, log fasthttp.Logger,
	conns func(net.Conn, fasthttp.ConnState)) *fasthttp.Server {
	return &fasthttp.Server{
		Handler: func(ctx *fasthttp.RequestCtx) {
			headerRead(ctx) // conn.go
			h(ctx)
		},
		ConnState:                    func(c net.Conn, st fasthttp.ConnState) { watchConnState(c, st, conns) },
		ErrorHandler:                 parseFailed,
		ReadTimeout:                  t.ReadHeader,
		IdleTimeout:                  t.Idle,
		ReadBufferSize:               MaxHeaderBytes,
		StreamRequestBody:            true,
		MaxRequestBodySize:           1, // at most a body's first byte is read before the handler runs
		DisablePreParseMultipartForm: true,
		NoDefaultServerHeader:        true,
		NoDefaultContentType:         true,
		CloseOnShutdown:              true,
		// A worker goroutine left idle (its connection closed or parked)
		// goes after a quarter of a second rather than fasthttp's ten,
		// with the stack it grew, so that the memory of a burst of
		// connections gone idle can be given back soon (Parking).
		MaxIdleWorkerDuration: WorkerIdle,
		Logger:                log,
	}
}

// WorkerIdle is how long the server's worker goroutine left idle lives on,
// waiting for another connection to serve.
const WorkerIdle = 250 * time.Millisecond

// SetBodyDeadline gives the request ctx serves until at to arrive in full.
// The server read at most the body's first byte before the handler ran
// (under the header timeout); the rest is read while the handler streams it.
func SetBodyDeadline(ctx *fasthttp.RequestCtx, at time.Time) {
	_ = ctx.Conn().SetReadDeadline(at)
}

// parseFailed answers a request the server could not read.
func parseFailed(ctx *fasthttp.RequestCtx, err error) {
	var small *fasthttp.ErrSmallBuffer
	var ne net.Error
	switch {
	case errors.As(err, &small):
		WriteProblem(ctx, fasthttp.StatusRequestHeaderFieldsTooLarge, "the request's header fields are larger than 64 KiB")
	case errors.Is(err, ErrBareLFEnd):
		WriteProblem(ctx, fasthttp.StatusBadRequest, bareLFDetail)
	case errors.As(err, &ne) && ne.Timeout():
		WriteProblem(ctx, fasthttp.StatusRequestTimeout, "the request did not arrive within the header timeout")
	default:
		WriteProblem(ctx, fasthttp.StatusBadRequest, "the request is malformed")
	}
	ctx.SetConnectionClose()
}

// Lingering names the functions of fasthttp's goroutines that outlive a
// Server or a Proxy after Shutdown and Close: the process-wide clock of
// the Date header (started once, never stopped), and two sweepers that
// end on their own after their next sleep (the server's idle-worker sweep,
// 10s; the client's idle-connection sweep once its connections are closed,
// up to 90s). Leak checks ignore them (goleak.IgnoreAnyFunction).
var Lingering = []string{
	"github.com/valyala/fasthttp.updateServerDate.func1",
	"github.com/valyala/fasthttp.(*HostClient).connsCleaner",
	"github.com/valyala/fasthttp.(*workerPool).Start.func2",
}
