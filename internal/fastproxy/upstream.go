package fastproxy

import (
	"errors"
	"io"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// newClient returns a pooled keep-alive client for the upstream at u
// (http or https; the port defaults to the scheme's). Response bodies are
// streamed (Response.BodyStream), never buffered whole. timeout bounds
// connecting, and every write to and read from the upstream: an upstream
// that takes no bytes of a request for that long, or sends none of its
// answer, is given up (504); one that keeps sending may take as long as
// it needs, so that long downloads are never cut.
func newClient(u *url.URL, timeout time.Duration, conns *openConns) *fasthttp.HostClient {
	tls := u.Scheme == "https"
	addr := u.Host
	if u.Port() == "" {
		if tls {
			addr = net.JoinHostPort(u.Hostname(), "443")
		} else {
			addr = net.JoinHostPort(u.Hostname(), "80")
		}
	}
	dialer := &net.Dialer{Timeout: timeout, KeepAlive: 30 * time.Second}
	return &fasthttp.HostClient{
		Addr:  addr,
		IsTLS: tls,
		Dial: func(addr string) (net.Conn, error) {
			c, err := dialer.Dial("tcp", addr)
			if err != nil {
				return nil, err
			}
			return conns.add(c, timeout), nil
		},
		MaxConns:                      4096,
		MaxConnWaitTimeout:            timeout,
		MaxIdleConnDuration:           90 * time.Second,
		StreamResponseBody:            true,
		NoDefaultUserAgentHeader:      true,
		DisablePathNormalizing:        true,
		DisableHeaderNamesNormalizing: true,
		// A request without a body whose method is safe is sent again,
		// once, when the kept-alive connection it went on turns out
		// closed by the upstream (stale), as net/http's Transport does.
		// One whose body streams cannot be, one that timed out has had
		// its time, and one whose connection sluice closed (Abort) is not
		// to be sent again.
		MaxIdemponentCallAttempts: 2,
		RetryIfErr: func(req *fasthttp.Request, _ int, err error) (bool, bool) {
			return false, stale(err) && !conns.aborted.Load() && !req.IsBodyStream() && safeMethod(&req.Header)
		},
	}
}

// stale reports whether err says that the upstream had closed the
// connection before it read the request: the write failed (EPIPE, which
// Linux reports once the upstream's FIN and then a reset have arrived,
// as a keep-alive probe of an idle connection draws; ECONNRESET), or the
// connection was reset, or ended before the answer's first byte (a bare
// io.EOF: fasthttp wraps an end met later), before its head was read and
// so before any of it went to the caller. net.ErrClosed is sluice's own
// close (Abort).
func stale(err error) bool {
	return !errors.Is(err, net.ErrClosed) && (err == io.EOF || errors.Is(err, fasthttp.ErrConnectionClosed) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET))
}

// safeMethod reports whether h's method is one net/http's Transport sends
// again on a new connection: GET, HEAD, OPTIONS, TRACE (RFC 9110 9.2.1).
// PUT and DELETE are idempotent but not safe: sent twice, the second
// answer may not be the first's (a 404 for a DELETE that succeeded).
func safeMethod(h *fasthttp.RequestHeader) bool {
	return h.IsGet() || h.IsHead() || h.IsOptions() || h.IsTrace()
}

// upstreamConn gives each read and each write wait to complete.
type upstreamConn struct {
	net.Conn
	rd, wd Deadline
	open   *openConns
	once   sync.Once
}

func (c *upstreamConn) Close() error {
	c.once.Do(func() { c.open.remove(c) })
	return c.Conn.Close()
}

// openConns are a client's open connections, for Proxy.Abort.
type openConns struct {
	mu      sync.Mutex
	m       map[*upstreamConn]struct{}
	aborted atomic.Bool // Abort ran: nothing is sent again
}

// add is c, each read and write on it waiting at most timeout, known to
// o until closed.
func (o *openConns) add(c net.Conn, timeout time.Duration) *upstreamConn {
	uc := &upstreamConn{Conn: c, rd: Deadline{Wait: timeout}, wd: Deadline{Wait: timeout}, open: o}
	o.mu.Lock()
	o.m[uc] = struct{}{}
	o.mu.Unlock()
	return uc
}

func (o *openConns) remove(c *upstreamConn) {
	o.mu.Lock()
	delete(o.m, c)
	o.mu.Unlock()
}

func (o *openConns) closeAll() {
	o.mu.Lock()
	cs := make([]*upstreamConn, 0, len(o.m))
	for c := range o.m {
		cs = append(cs, c)
	}
	o.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
	}
}

func (c *upstreamConn) Read(p []byte) (int, error) { return c.rd.Read(c.Conn, p) }

func (c *upstreamConn) Write(p []byte) (int, error) { return c.wd.Write(c.Conn, p) }
