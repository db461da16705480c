package fastproxy

import (
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// Proxy sends callers' requests on to one upstream over pooled keep-alive
// connections and streams the answers back. It is safe for concurrent use.
type Proxy struct {
	client  *fasthttp.HostClient
	conns   *openConns
	host    string        // the upstream's host[:port], the Host of a request that came without one
	addr    string        // host:port, for Dial
	tls     bool          // https
	timeout time.Duration // the upstream timeout
	// StripResponse are fields of the upstream's answer that must not
	// reach the caller, in any spelling an upstream reads as the same
	// (httpname.SameHeader); nil: none but the hop-by-hop fields.
	StripResponse []string
}

// New returns a Proxy to the upstream at u (http or https; its path and
// query are the gateway's to join, Forwarding.URI). timeout bounds
// connecting and each read and write on an upstream connection.
func New(u *url.URL, timeout time.Duration) *Proxy {
	conns := &openConns{m: make(map[*upstreamConn]struct{})}
	c := newClient(u, timeout, conns)
	return &Proxy{client: c, conns: conns, host: u.Host, addr: c.Addr, tls: c.IsTLS, timeout: timeout}
}

// Close closes the idle upstream connections.
func (p *Proxy) Close() { p.client.CloseIdleConnections() }

// Abort closes every upstream connection, idle or in use: requests waiting
// for the upstream fail at once (UpstreamFailed), as a gateway's drain
// ends them.
func (p *Proxy) Abort() {
	p.client.CloseIdleConnections()
	p.conns.aborted.Store(true)
	p.conns.closeAll()
}

// Outcome says how a request Serve handled ended.
type Outcome int

// The outcomes of Serve. All but Answered and CallerAborted have been
// answered with a problem+json body of sluice's own.
const (
	Answered        Outcome = iota // the upstream's status and fields are on ctx.Response, its body streaming
	CallerAborted                  // the caller went away while its body was read: nobody reads an answer
	CallerTimeout                  // 408: the body did not arrive within the body timeout
	CallerMalformed                // 400: the body's chunked encoding is broken
	UpstreamTimeout                // 504: no answer within the upstream timeout
	UpstreamSlow                   // 504: the upstream took the body too slowly
	UpstreamFailed                 // 502: the upstream could not be reached, or broke off
)

// Serve sends the request ctx serves on as f says, with body (nil: it
// has none; NewBody, Buffers.Read), and puts the upstream's answer on
// ctx.Response: status and fields at once, the body as a stream the
// server copies after the handler returns. When Answered, done (nil:
// none) runs once that copy has ended, or before Serve returns when there
// is no body to copy, told why the copy stopped short (the upstream broke
// the body off, or the caller went; nil: the whole body went); otherwise
// it never runs. done is the one call back a request makes. err is what
// failed, nil when Answered. The body is sent by the time Serve returns.
func (p *Proxy) Serve(ctx *fasthttp.RequestCtx, f *Forwarding, body *Body, done func(error)) (Outcome, error) {
	req := fasthttp.AcquireRequest()
	f.Build(&ctx.Request.Header, &req.Header, ctx.IsTLS())
	if len(req.Header.Host()) == 0 { // HTTP/1.0 without Host: the upstream's, as net/http's ReverseProxy sends
		req.Header.SetHost(p.host)
	}
	if body != nil {
		req.SetBodyStream(body, int(body.want))
	}
	resp := fasthttp.AcquireResponse()
	resp.SkipBody = ctx.IsHead()
	err := p.client.Do(req, resp)
	fasthttp.ReleaseRequest(req)
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		return failed(ctx, body, err)
	}
	if resp.StatusCode() < 200 { // 101 (fasthttp skips 100 and 103) to a request without Upgrade (upgrade.go sends those)
		resp.SetConnectionClose() // the upstream may speak another protocol on it now
		fasthttp.ReleaseResponse(resp)
		return failed(ctx, body, errInterim)
	}
	p.answer(ctx, resp, done)
	return Answered, nil
}

// answer puts resp on ctx.Response; resp is released once its body has
// gone to the caller.
func (p *Proxy) answer(ctx *fasthttp.RequestCtx, resp *fasthttp.Response, done func(error)) {
	CopyResponse(&resp.Header, &ctx.Response.Header, p.StripResponse)
	n := resp.Header.ContentLength()
	st := resp.BodyStream()
	if ctx.IsHead() || st == nil {
		if ctx.IsHead() && n >= 0 {
			ctx.Response.Header.SetContentLength(n)
			ctx.Response.SkipBody = true
		} else {
			ctx.Response.SetBody(resp.Body())
		}
		fasthttp.ReleaseResponse(resp)
		if done != nil {
			done(nil)
		}
		return
	}
	if n < 0 {
		n = -1 // chunked to the caller, whatever the upstream framed it with
	}
	b := bodies.Get().(*upstreamBody)
	b.resp, b.done = resp, done
	if n >= 0 && n <= smallBody && b.readSmall(st, n) {
		ctx.Response.SetBody(b.small[:n])
		_ = b.CloseWithError(nil)
		return
	}
	ctx.Response.SetBodyStream(b, n)
}

// smallBody is the largest answer body read whole before the answer goes
// to the caller, rather than streamed by the server after the handler:
// most answers of an API are this small, and reading them at once gives
// the upstream connection back before the caller is written to and spares
// the stream's steps. Measured with bench/gateway.sh and
//
//	go test -run XXX -bench Run/Allowed -benchmem ./gateway/
const smallBody = 4 << 10

// bodies recycles upstreamBody: one fewer allocation per proxied request.
var bodies = sync.Pool{New: func() any { return new(upstreamBody) }}

// upstreamBody is the upstream's response body on its way to the caller.
// The server closes it once, after the copy, with CloseWithError (it has
// no Close: the server would call both, and the second would find it
// recycled), which releases the response and its connection.
type upstreamBody struct {
	resp *fasthttp.Response
	done func(error)
	// A small body is read whole into small. When the upstream broke it
	// off, the answer streams as a large one would: pre, what came, then
	// err, why the rest did not.
	small [smallBody + 1]byte
	pre   []byte
	err   error
}

// readSmall reads the whole body of n bytes (n <= smallBody) from st into
// b.small, to its end (the stream gives the connection back only once it
// has said io.EOF). It reports whether it did; if not, b streams what came
// and the error.
func (b *upstreamBody) readSmall(st io.Reader, n int) bool {
	got := 0
	for {
		k, err := st.Read(b.small[got : n+1])
		got += k
		switch {
		case err == io.EOF && got == n:
			return true
		case err == nil && got <= n:
			continue
		case err == nil || err == io.EOF:
			err = io.ErrUnexpectedEOF // more or less than Content-Length
		}
		b.pre, b.err = b.small[:min(got, n)], err
		return false
	}
}

func (b *upstreamBody) Read(p []byte) (int, error) {
	if len(b.pre) > 0 {
		k := copy(p, b.pre)
		b.pre = b.pre[k:]
		return k, nil
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.resp.BodyStream().Read(p)
}

// CloseWithError ends the copy; err is why it stopped before the end (nil:
// it ended).
func (b *upstreamBody) CloseWithError(err error) error {
	resp, done := b.resp, b.done
	b.resp, b.done, b.pre, b.err = nil, nil, nil, nil
	bodies.Put(b)
	_ = resp.CloseBodyStream()
	fasthttp.ReleaseResponse(resp)
	if done != nil {
		done(err)
	}
	return nil
}

// errInterim is an upstream's interim answer (1xx) where a final one was due.
var errInterim = errors.New("fastproxy: the upstream answered 101 Switching Protocols to a request that asked for no upgrade")

// failed answers a request the upstream did not answer, blaming the side
// that failed.
func failed(ctx *fasthttp.RequestCtx, body *Body, err error) (Outcome, error) {
	var bodyErr error
	if body != nil {
		bodyErr = body.ended()
	}
	slow := body != nil && isTimeout(bodyErr) && body.upstreamSlow()
	switch {
	case bodyErr != nil && bodyErr != io.EOF && !slow:
		return callerFailed(ctx, bodyErr)
	case slow:
		WriteProblem(ctx, fasthttp.StatusGatewayTimeout, "the upstream service did not take the request in time")
		return UpstreamSlow, bodyErr
	case isTimeout(err) || errors.Is(err, fasthttp.ErrNoFreeConns):
		WriteProblem(ctx, fasthttp.StatusGatewayTimeout, "the upstream service did not answer in time")
		return UpstreamTimeout, err
	default:
		WriteProblem(ctx, fasthttp.StatusBadGateway, "the upstream service could not be reached")
		return UpstreamFailed, err
	}
}

// callerFailed answers a request whose body could not be read: 408 when it
// was too slow, 400 when it was malformed, nothing when the caller went.
func callerFailed(ctx *fasthttp.RequestCtx, err error) (Outcome, error) {
	ctx.SetConnectionClose() // the rest of the body is not read
	switch {
	case isTimeout(err):
		WriteProblem(ctx, fasthttp.StatusRequestTimeout, "the request body did not arrive within the body timeout")
		return CallerTimeout, err
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET):
		return CallerAborted, err
	default:
		WriteProblem(ctx, fasthttp.StatusBadRequest, "the request body is malformed")
		return CallerMalformed, err
	}
}

// isTimeout reports whether err is a timeout: a net.Error's, or
// fasthttp.ErrTimeout (which has Timeout but not net.Error's Temporary).
func isTimeout(err error) bool {
	var te interface{ Timeout() bool }
	return errors.As(err, &te) && te.Timeout()
}
