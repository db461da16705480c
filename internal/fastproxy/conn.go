package fastproxy

import (
	"crypto/tls"
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

// The callers' side of the server: the connections fasthttp serves are
// this file's, so that what happens on every read and write (the write
// deadline, the bare-LF header watch, parking) stays in this package and
// the gateway is handed a net.Listener.

// CapConnections lets at most max connections from ln be open at once.
// Accept waits for one to close before it accepts another, so that further
// callers wait in the kernel's listen backlog (and, once that is full, are
// refused by the kernel) rather than cost the gateway anything. max <= 0:
// no cap.
func CapConnections(ln net.Listener, max int) net.Listener {
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

// SyscallConn is the socket's, for the parker.
func (c *cappedConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, errors.ErrUnsupported
}

// StallWrites closes, by failing the write, a connection from ln on which
// one write of an answer has waited wait for the caller to read: a caller
// that stops reading its answers (a slow-read attack, or pipelined requests
// whose answers it never reads) would otherwise hold its connection, the
// proxy's goroutines and an upstream connection for ever. net/http's own
// WriteTimeout would bound the whole answer, cutting long downloads.
// With park (NewParking; nil: none), a connection waiting long for its
// next request is parked: a plain one, and a *tls.Conn made by TLSServer
// (its socket parked, its TLS state kept for it); peer, if set, reads what
// a TLS handshake verified once (PeerOf).
//
// The server (NewServer) watches these connections' header blocks: it
// must be the one that serves them.
func StallWrites(ln net.Listener, wait time.Duration, park *Parking, peer func(*tls.Conn) any) net.Listener {
	return &stallListener{Listener: ln, wait: wait, park: park, peer: peer}
}

type stallListener struct {
	net.Listener
	wait time.Duration
	park *Parking
	peer func(*tls.Conn) any
}

func (l *stallListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*tls.Conn); ok {
		var peer any
		if l.peer != nil {
			peer = l.peer(tc)
		}
		if _, swappable := tc.NetConn().(*swapConn); swappable && l.park != nil {
			return l.park.tlsConn(tc, peer), nil
		}
		sc := &stallConn{Conn: c, wd: Deadline{Wait: l.wait}} // never parked: its socket cannot be handed over
		sc.head.Begin()
		return &tlsStallConn{stallConn: sc, tls: tc, peer: peer}, nil
	}
	if l.park != nil {
		return l.park.conn(c), nil
	}
	sc := &stallConn{Conn: c, wd: Deadline{Wait: l.wait}}
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
	peer any // what StallWrites' peer read of the handshake
}

// TLSServer is tls.Server over c, with c kept where a parked connection
// can hand over its socket (StallWrites parks it).
func TLSServer(c net.Conn, conf *tls.Config) *tls.Conn {
	return tls.Server(&swapConn{Conn: c}, conf)
}

// swapConn is the socket under a TLS connection made by TLSServer: a
// parked connection's net.Conn is closed and the TLS connection goes on
// over the new one it is woken with. Only the goroutine serving the
// connection, or the parker while it is parked, touches Conn: once the
// connection is handed over, closing it again touches nothing
// (stallConn.life).
type swapConn struct{ net.Conn }

// socket is the swapConn under c's TLS connection (TLSServer's).
func (c *tlsStallConn) socket() *swapConn { return c.tls.NetConn().(*swapConn) }

// Handshake is done before the connection is handed on.
func (c *tlsStallConn) Handshake() error { return c.tls.Handshake() }

func (c *tlsStallConn) ConnectionState() tls.ConnectionState { return c.tls.ConnectionState() }

// PeerOf is what StallWrites' peer read of the TLS handshake of ctx's
// connection, nil for a plain connection.
func PeerOf(ctx *fasthttp.RequestCtx) any {
	if c, ok := ctx.Conn().(*tlsStallConn); ok {
		return c.peer
	}
	return nil
}

// stallConn gives each write wait to complete. It also hands the reader
// first what WatchGone read ahead, and fails at once the read the server
// would wait on for ever for a header block that ended in a bare LF
// (HeaderEnd: watched from the connection's start or its return to
// waiting for a request, headerNext, to the handler, headerRead).
type stallConn struct {
	net.Conn
	wd     Deadline
	peeked []byte // read by WatchGone, not yet by the server
	head   HeaderEnd

	// answering is set when a request's handler begins (headerRead) and
	// cleared when the connection is idle again, closed or hijacked
	// (answered): fasthttp writes a handler's answer after it returns, so
	// a drain that closes connections waits for it (Answering).
	answering atomic.Bool

	// Parking (park.go): park is nil for a connection never parked. idle,
	// shortened and idleUntil are the server goroutine's; life is set by
	// Read and Close, which a drain may call from elsewhere, and more than
	// once. tlsc is the TLS connection this one is (nil: a plain one).
	park      *Parking
	tlsc      *tlsStallConn
	idle      bool         // the server waits for the next request
	shortened bool         // and its wait was cut to the parker's after
	idleUntil time.Time    // the idle timeout's deadline (zero: none)
	waited    bool         // it has waited for a next request before (or was woken)
	firstWait bool         // the wait now is its first
	woken     bool         // it was parked, and woken
	life      atomic.Int32 // connOpen, connParking, connParked or connClosed
}

func (c *stallConn) Read(p []byte) (int, error) {
	if c.head.Stuck() {
		return 0, ErrBareLFEnd
	}
	if len(c.peeked) > 0 {
		n := copy(p, c.peeked)
		c.peeked = c.peeked[n:]
		c.head.See(p[:n])
		return n, nil
	}
	n, err := c.Conn.Read(p)
	if c.park != nil && c.parks(n, err) && c.life.CompareAndSwap(connOpen, connParking) { // not while a drain closes it
		return 0, errParked
	}
	c.head.See(p[:n])
	return n, err
}

func (c *stallConn) Write(p []byte) (int, error) { return c.wd.Write(c.Conn, p) }

// watchConnState is the server's ConnState (NewServer): a connection the
// server waits on for its next request (idle) may deliver a header block
// now; one whose next request has begun (active) no longer waits idle.
// conns (nil: none) is told of the other states.
func watchConnState(c net.Conn, st fasthttp.ConnState, conns func(net.Conn, fasthttp.ConnState)) {
	switch st {
	case fasthttp.StateIdle:
		answered(c)
		if sc := watchedConn(c); sc != nil {
			sc.head.Begin()
			sc.idleWait(true)
		}
	case fasthttp.StateActive:
		if sc := watchedConn(c); sc != nil {
			sc.idleWait(false)
		}
	default:
		if st == fasthttp.StateClosed || st == fasthttp.StateHijacked {
			answered(c)
		}
		if conns != nil {
			conns(c, st)
		}
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

// Answering reports whether the server (NewServer) began a request on c
// whose answer it has not written yet: fasthttp writes a handler's answer
// after the handler returns, so a drain that closes connections as soon
// as no handler runs would lose it.
func Answering(c net.Conn) bool {
	sc := watchedConn(c)
	return sc != nil && sc.answering.Load()
}

// watchedConn finds the stallConn under what the server got.
func watchedConn(c net.Conn) *stallConn {
	if cc, ok := c.(*cappedConn); ok {
		c = cc.Conn
	}
	if tc, ok := c.(*tlsStallConn); ok {
		return tc.stallConn
	}
	sc, _ := c.(*stallConn)
	return sc
}
