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
		// A request without a body is sent again, once, when a kept-alive
		// connection turns out closed by the upstream before it was
		// answered (as net/http does); one whose body streams cannot be,
		// one that timed out has had its time, and one whose connection
		// sluice closed (Abort) is not to be sent again.
		MaxIdemponentCallAttempts: 2,
		RetryIfErr: func(req *fasthttp.Request, _ int, err error) (bool, bool) {
			closedThere := errors.Is(err, fasthttp.ErrConnectionClosed) || errors.Is(err, io.EOF) ||
				errors.Is(err, syscall.ECONNRESET)
			return false, closedThere && !conns.aborted.Load() && !errors.Is(err, net.ErrClosed) && !req.IsBodyStream() &&
				(req.Header.IsGet() || req.Header.IsHead())
		},
	}
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
