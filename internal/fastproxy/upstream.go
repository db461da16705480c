package fastproxy

import (
	"net"
	"net/url"
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
func newClient(u *url.URL, timeout time.Duration) *fasthttp.HostClient {
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
			return &upstreamConn{Conn: c, wait: timeout}, nil
		},
		MaxConns:                      4096,
		MaxConnWaitTimeout:            timeout,
		MaxIdleConnDuration:           90 * time.Second,
		StreamResponseBody:            true,
		NoDefaultUserAgentHeader:      true,
		DisablePathNormalizing:        true,
		DisableHeaderNamesNormalizing: true,
		// A request without a body is sent again, once, when a kept-alive
		// connection turns out closed before it was answered (as net/http
		// does); one whose body streams cannot be, and one that timed out
		// has had its time.
		MaxIdemponentCallAttempts: 2,
		RetryIfErr: func(req *fasthttp.Request, _ int, err error) (bool, bool) {
			return false, !isTimeout(err) && !req.IsBodyStream() && (req.Header.IsGet() || req.Header.IsHead())
		},
	}
}

// upstreamConn gives each read and each write wait to complete.
type upstreamConn struct {
	net.Conn
	wait time.Duration
}

func (c *upstreamConn) Read(p []byte) (int, error) {
	_ = c.Conn.SetReadDeadline(time.Now().Add(c.wait))
	return c.Conn.Read(p)
}

func (c *upstreamConn) Write(p []byte) (int, error) {
	_ = c.Conn.SetWriteDeadline(time.Now().Add(c.wait))
	return c.Conn.Write(p)
}
