package gateway

import (
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/internal/fastproxy"
	"github.com/sluice-rl/sluice/policy"
)

// capConnections lets at most max connections from ln be open at once.
// Accept waits for one to close before it accepts another, so that further
// callers wait in the kernel's listen backlog (and, once that is full, are
// refused by the kernel) rather than cost the gateway anything.
func capConnections(ln net.Listener, max int) net.Listener {
	if max <= 0 {
		return ln
	}
	return &cappedListener{Listener: ln, slots: make(chan struct{}, max), done: make(chan struct{})}
}

type cappedListener struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *cappedListener) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &cappedConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *cappedListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// cappedConn gives its slot back when closed, once.
type cappedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *cappedConn) Close() error {
	c.once.Do(c.release)
	return c.Conn.Close()
}

// stallWrites closes, by failing the write, a connection from ln on which
// one write of an answer has waited wait for the caller to read: a caller
// that stops reading its answers (a slow-read attack, or pipelined requests
// whose answers it never reads) would otherwise hold its connection, the
// proxy's goroutines and an upstream connection for ever. net/http's own
// WriteTimeout would bound the whole answer, cutting long downloads.
// With parking (park.go), a plain connection waiting long for its next
// request is parked.
func stallWrites(ln net.Listener, wait time.Duration, park *parking) net.Listener {
	return &stallListener{Listener: ln, wait: wait, park: park}
}

type stallListener struct {
	net.Listener
	wait time.Duration
	park *parking
}

func (l *stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*tls.Conn); ok {
		sc := &stallConn{Conn: c, wd: fastproxy.Deadline{Wait: l.wait}} // never parked: TLS keeps its own buffers
		sc.head.Begin()
		return &tlsStallConn{stallConn: sc, tls: tc, peer: verifiedPeer(tc)}, nil
	}
	if l.park != nil {
		return l.park.conn(c), nil
	}
	sc := &stallConn{Conn: c, wd: fastproxy.Deadline{Wait: l.wait}}
	sc.head.Begin()
	return sc, nil
}

// tlsStallConn is a stallConn over a TLS connection, which fasthttp sees
// as one (ctx.IsTLS: X-Forwarded-Proto https; ctx.TLSConnectionState). A
// write that stalls fails the TLS connection for good, as crypto/tls does
// with any timed-out write: it is closed then, as a plain one is.
type tlsStallConn struct {
	*stallConn
	tls  *tls.Conn
	peer *policy.PeerCert // the verified client certificate (clientcert.go); nil without
}

// Handshake is done before the connection is handed on (tlsListener).
func (c *tlsStallConn) Handshake() error { return c.tls.Handshake() }

func (c *tlsStallConn) ConnectionState() tls.ConnectionState { return c.tls.ConnectionState() }

// stallConn gives each write wait to complete. It also hands the reader
// first what watchGone read ahead, and fails at once the read the server
// would wait on for ever for a header block that ended in a bare LF
// (fastproxy.HeaderEnd: watched from the connection's start or its
// return to waiting for a request, headerNext, to the handler, headerRead).
type stallConn struct {
	net.Conn
	wd     fastproxy.Deadline
	peeked []byte // read by watchGone, not yet by the server
	head   fastproxy.HeaderEnd

	// answering is set when a request's handler begins (headerRead) and
	// cleared when the connection is idle again, closed or hijacked
	// (answered): fasthttp writes a handler's answer after it returns, so
	// a drain that closes connections waits for it (fastConns.answering).
	answering atomic.Bool

	// Parking (park.go): park is nil for a connection never parked. idle,
	// shortened and idleUntil are the server goroutine's; parking is set
	// by Read for Close, which a drain may call from elsewhere.
	park      *parking
	idle      bool      // the server waits for the next request
	shortened bool      // and its wait was cut to parkAfter
	idleUntil time.Time // the idle timeout's deadline (zero: none)
	parking   atomic.Bool
}

func (c *stallConn) Read(p []byte) (int, error) {
	if c.head.Stuck() {
		return 0, fastproxy.ErrBareLFEnd
	}
	if len(c.peeked) > 0 {
		n := copy(p, c.peeked)
		c.peeked = c.peeked[n:]
		c.head.See(p[:n])
		return n, nil
	}
	n, err := c.Conn.Read(p)
	if c.park != nil && c.parks(n, err) {
		c.parking.Store(true)
		return 0, errParked
	}
	c.head.See(p[:n])
	return n, err
}

// headerNext notes that the server waits for c's next request (its
// ConnState is idle): what c delivers now may be a header block.
func headerNext(c net.Conn) {
	if sc := watchedConn(c); sc != nil {
		sc.head.Begin()
		sc.idleWait(true)
	}
}

// requestBegun notes that the first byte of c's next request has come
// (its ConnState is active): its wait is no longer for an idle connection.
func requestBegun(c net.Conn) {
	if sc := watchedConn(c); sc != nil {
		sc.idleWait(false)
	}
}

// headerRead notes that the server has read the header block of the
// request ctx serves: what its connection delivers now is its body.
func headerRead(ctx *fasthttp.RequestCtx) {
	if sc := watchedConn(ctx.Conn()); sc != nil {
		sc.head.Done()
		sc.answering.Store(true)
	}
}

// answered notes that c's answer has been written (its ConnState is idle
// again) or that c is no longer the server's (closed, hijacked).
func answered(c net.Conn) {
	if sc := watchedConn(c); sc != nil {
		sc.answering.Store(false)
	}
}

func (c *stallConn) Write(p []byte) (int, error) { return c.wd.Write(c.Conn, p) }
