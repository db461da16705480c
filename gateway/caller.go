package gateway

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/internal/fastproxy"
)

// serveCaller serves one caller's request under the configuration in force
// when it arrives. A request that came back from sluice's own upstream is
// answered 508. A body must arrive within server.body_timeout, counted
// from the end of the longest time a rule may hold the request for its
// turn (delay) and protect's queue may keep it waiting; it is watched, so
// that a failure reading it is told apart from the upstream's.
func (g *Gateway) serveCaller(w http.ResponseWriter, r *http.Request) {
	snap := g.snap.Load()
	if r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0 {
		// A rule may hold the request for its turn (delay), and protect's
		// queue keep it waiting, before its body is read.
		starts := time.Now().Add(snap.maxWait)
		_ = http.NewResponseController(w).SetReadDeadline(starts.Add(g.server.BodyTimeout))
		wb := &withBody{ResponseWriter: w, body: callerBody{src: r.Body, start: starts}}
		r.Body, w = &wb.body, wb
	}
	if g.looped(r) {
		g.loopAnswer(w) // like the limiter's answers, without waiting for the body
		return
	}
	snap.handler.ServeHTTP(w, r)
}

// callerBody is a request body that remembers how reading it ended, and
// how long it kept the reader waiting.
type callerBody struct {
	src    io.ReadCloser
	start  time.Time    // when the body timeout started
	waited atomic.Int64 // nanoseconds spent in src.Read
	mu     sync.Mutex
	err    error // io.EOF once read to the end
}

func (b *callerBody) Read(p []byte) (int, error) {
	t0 := time.Now()
	n, err := b.src.Read(p)
	b.waited.Add(int64(time.Since(t0)))
	if err != nil {
		b.mu.Lock()
		if b.err == nil {
			b.err = err
		}
		b.mu.Unlock()
	}
	return n, err
}

// upstreamSlow reports whether reading the body ended with err because
// the upstream took it too slowly: the body timeout passed while sluice
// had spent less than half of it waiting for the caller, the rest waiting
// for the upstream to take what was read.
func (b *callerBody) upstreamSlow(err error) bool {
	return isTimeout(err) && 2*time.Duration(b.waited.Load()) < time.Since(b.start)
}

func (b *callerBody) Close() error { return b.src.Close() }

// ended returns the error reading ended with: nil while unread or partly
// read, io.EOF once read to the end.
func (b *callerBody) ended() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// withBody is the ResponseWriter of a request with a body, and the body
// as read. An answer the limiter writes itself (401, 429, 503) leaves the
// body unread, and net/http would read up to 256 KiB of it before writing
// the answer and again after: a body sent slowly would hold the answer
// back. So such an answer closes the connection instead of reading on.
// Once the request is passed on, the proxy's answers go out as they are.
type withBody struct {
	http.ResponseWriter
	body   callerBody
	passed bool // the limiter passed the request on to the proxy
}

func (wb *withBody) WriteHeader(code int) {
	if !wb.passed {
		leaveBody(wb.ResponseWriter, &wb.body)
	}
	wb.ResponseWriter.WriteHeader(code)
}

func (wb *withBody) Write(p []byte) (int, error) {
	if !wb.passed {
		leaveBody(wb.ResponseWriter, &wb.body) // no-op once the header is out
	}
	return wb.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection.
func (wb *withBody) Unwrap() http.ResponseWriter { return wb.ResponseWriter }

// leaveBody prepares an answer written before body was read to its end:
// the connection closes after the answer, and the read deadline passes at
// once, so that net/http neither waits for the rest of the body before the
// answer nor after it.
func leaveBody(w http.ResponseWriter, body *callerBody) {
	if body == nil || body.ended() == io.EOF {
		return
	}
	w.Header()["Connection"] = []string{"close"}
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
}

// passOn hands a request the limiter passed to the proxy.
type passOn struct{ proxy *httputil.ReverseProxy }

func (p passOn) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if wb := withBodyOf(w); wb != nil {
		wb.passed = true
	}
	p.proxy.ServeHTTP(w, r)
}

// bodyOf returns the body of the request w answers, if it has one.
func bodyOf(w http.ResponseWriter) *callerBody {
	if wb := withBodyOf(w); wb != nil {
		return &wb.body
	}
	return nil
}

// withBodyOf finds the withBody w is or wraps (the limiter hands the proxy
// a recorder of the status in front of it), or nil.
func withBodyOf(w http.ResponseWriter) *withBody {
	for w != nil {
		if wb, ok := w.(*withBody); ok {
			return wb
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return nil
		}
		w = u.Unwrap()
	}
	return nil
}

// answer writes a problem+json answer of sluice's own to a request whose
// body may be unread.
func answer(w http.ResponseWriter, status int, detail string) {
	leaveBody(w, bodyOf(w))
	httplimit.WriteProblem(w, status, detail)
}

// proxyFailed answers a request the proxy could not complete, blaming the
// side that failed: the caller (its body broke off, was malformed or too
// slow: counted in sluice_caller_errors_total) or the upstream (502, or
// 504 when it did not answer within server.upstream_timeout or the body
// timeout passed while it was slow to take the body: counted in
// sluice_upstream_errors_total).
func (g *Gateway) proxyFailed(cfg *config.File, w http.ResponseWriter, r *http.Request, err error) {
	body := bodyOf(w)
	var bodyErr error
	if body != nil {
		bodyErr = body.ended()
	}
	slowUpstream := body != nil && body.upstreamSlow(bodyErr)
	switch {
	case bodyErr != nil && bodyErr != io.EOF && !slowUpstream:
		httplimit.NoteFailure(w, httplimit.CallerFailed)
		g.callerFailed(w, r, bodyErr)
	case errors.Is(context.Cause(r.Context()), errDraining):
		httplimit.NoteFailure(w, httplimit.CallerFailed) // says nothing about the upstream
		answer(w, http.StatusServiceUnavailable, "the gateway is shutting down; retry")
	case slowUpstream: // net/http has cancelled the request for the read that timed out
		httplimit.NoteFailure(w, httplimit.UpstreamTimeout)
		g.upstreamFailed(cfg, bodyErr, "upstream took the request body too slowly")
		answer(w, http.StatusGatewayTimeout, "the upstream service did not take the request in time")
	case r.Context().Err() != nil:
		httplimit.NoteFailure(w, httplimit.CallerFailed)
		g.metrics.callerErrors.WithLabelValues("aborted").Inc() // nobody reads an answer
	case isTimeout(err):
		httplimit.NoteFailure(w, httplimit.UpstreamTimeout)
		g.upstreamFailed(cfg, err, "upstream did not answer in time")
		answer(w, http.StatusGatewayTimeout, "the upstream service did not answer in time")
	default:
		httplimit.NoteFailure(w, httplimit.UpstreamFailed)
		g.upstreamFailed(cfg, err, "upstream unreachable")
		answer(w, http.StatusBadGateway, "the upstream service could not be reached")
	}
}

func (g *Gateway) upstreamFailed(cfg *config.File, err error, msg string) {
	g.metrics.upstreamFails.Inc()
	if g.logGate.allow(logSubject{kind: "upstream"}) {
		g.log.Warn(msg, "upstream", cfg.Upstream.Redacted(), "err", err.Error())
	}
}

// callerFailed answers a request whose body could not be read: 408 when it
// was too slow, 400 when it was malformed (a broken chunked encoding), and
// nothing when the caller went away.
func (g *Gateway) callerFailed(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case isTimeout(err):
		g.metrics.callerErrors.WithLabelValues("body_timeout").Inc()
		answer(w, http.StatusRequestTimeout, "the request body did not arrive within the body timeout")
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || r.Context().Err() != nil:
		g.metrics.callerErrors.WithLabelValues("aborted").Inc()
	default:
		g.metrics.callerErrors.WithLabelValues("malformed_body").Inc()
		if g.logGate.allow(logSubject{kind: "malformed"}) {
			g.log.Info("malformed request body", "err", err.Error())
		}
		answer(w, http.StatusBadRequest, "the request body is malformed")
	}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded)
}

// newTransport reaches the upstream: http.DefaultTransport's settings,
// more idle connections per host, and server.upstream_timeout for
// connecting, for each write of the request (an upstream that stops
// reading a body would otherwise hold the request for ever) and for the
// response headers once the request is sent.
func newTransport(s config.Server) *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 1024
	t.MaxIdleConnsPerHost = 512
	t.ResponseHeaderTimeout = s.UpstreamTimeout
	dialer := &net.Dialer{Timeout: s.UpstreamTimeout, KeepAlive: 30 * time.Second}
	t.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &stallConn{Conn: c, wd: fastproxy.Deadline{Wait: s.UpstreamTimeout}}, nil
	}
	return t
}
