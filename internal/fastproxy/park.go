package fastproxy

import (
	"crypto/tls"
	"errors"
	"net"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/internal/idlepark"
)

// errParked ends the server's wait for a connection's next request: the
// connection goes to the parker (stallConn.Close) instead of being closed.
var errParked = errors.New("fastproxy: idle connection parked")

// Parking is the parker of one server's callers (NewParking): it takes
// callers' connections idle for its after and serves them again when
// bytes arrive. Then a connection holds no goroutine, no buffer and no
// request context until bytes arrive, and costs about what an idle
// connection costs nginx (internal/idlepark); a TLS one (TLSServer) keeps
// its *tls.Conn, with the session's state and crypto/tls's own buffers.
// A busy connection never waits that long, so it never pays for parking
// and waking (a goroutine started, a request context taken from the
// pool).
type Parking struct {
	p     *idlepark.Parker
	first time.Duration  // how long a connection waits idle after its first answer before it is parked
	after time.Duration  // and after a later one
	idle  time.Duration  // the server's IdleTimeout
	wait  time.Duration  // stallConn's write wait
	woken sync.WaitGroup // the goroutines serving woken connections, or ending expired TLS ones

	// Giving back the memory of connections gone idle (reclaim).
	mu          sync.Mutex
	sinceGC     int         // connections parked, or closed after they were, since the last reclaim
	timer       *time.Timer // the reclaim pending, nil: none
	lastReclaim time.Time
	stopped     bool
}

// A burst of at least reclaimAfter connections parked is followed, once
// reclaimQuiet has passed without another, by a garbage collection that
// gives their buffers and stacks back to the system: a connection's read
// buffer and request context go back to fasthttp's pools when it is
// parked, its worker goroutine ends WorkerIdle later (sweeps every
// WorkerIdle: up to twice that), and Go frees pooled memory and the stacks
// of ended goroutines only at its next collections, which an idle server
// may not run for minutes. So is a burst of connections that ended after
// they were parked (closed by their callers, woken by a TLS close_notify
// or not, or at the idle timeout), for what they kept: a TLS connection's
// state, about 9 KiB, and what waking them took. At most once per
// reclaimEvery.
const (
	reclaimAfter = 1024
	reclaimQuiet = 100*time.Millisecond + 2*WorkerIdle
	reclaimEvery = 10 * time.Second
)

// parkedOne counts one more connection parked, or closed after it was
// parked (by the parker, or once woken).
func (k *Parking) parkedOne() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.sinceGC++; k.sinceGC < reclaimAfter || k.stopped {
		return
	}
	wait := max(reclaimQuiet, time.Until(k.lastReclaim.Add(reclaimEvery)))
	if k.timer == nil {
		k.timer = time.AfterFunc(wait, k.reclaim)
	} else {
		k.timer.Reset(wait)
	}
}

// reclaim collects twice (a pooled object survives one collection) and
// returns the free memory to the system.
func (k *Parking) reclaim() {
	k.mu.Lock()
	if k.stopped {
		k.mu.Unlock()
		return
	}
	k.sinceGC, k.lastReclaim = 0, time.Now()
	k.mu.Unlock()
	runtime.GC()
	debug.FreeOSMemory()
}

// NewParking starts parking srv's connections (StallWrites) once
// they have waited first for their second request, after for a later one,
// nil where it cannot (not Linux) or with an idle timeout, idle, too short
// to park within; wait is StallWrites' write wait. A woken connection is
// served by srv again, and is new to its ConnState; its waits are later
// ones.
//
// A short first keeps a burst of connections with one request each (new
// callers that then stay idle) from holding a goroutine each at once: Go
// keeps a goroutine's descriptor (about 400 bytes) for ever, and its
// poller's state of a socket and the heap's bookkeeping grow with the
// most connections served at once, not with those open.
func NewParking(srv *fasthttp.Server, first, after, idle, wait time.Duration) *Parking {
	if idle <= max(first, after) {
		return nil
	}
	k := &Parking{first: first, after: after, idle: idle, wait: wait}
	p, err := idlepark.New(idlepark.Options{Wake: func(c net.Conn, release func(), state any) {
		var served net.Conn
		if t, ok := state.(*tlsStallConn); ok { // its TLS connection goes on over the new socket
			t.socket().Conn = capped(c, release)
			t = k.tlsConn(t.tls, t.peer)
			t.waited, t.woken = true, true
			served = t
		} else {
			sc := k.conn(capped(c, release))
			sc.waited, sc.woken = true, true
			served = sc
		}
		if srv.ConnState != nil {
			srv.ConnState(served, fasthttp.StateNew)
		}
		k.woken.Go(func() { _ = srv.ServeConn(served) }) // closes it, or parks it again
	}, Ended: k.parkedOne, Expire: func(c net.Conn, release func(), state any) {
		// A TLS connection: its session ends with close_notify, as one
		// the server closes in its goroutine does (crypto/tls bounds the
		// write).
		t := state.(*tlsStallConn)
		t.socket().Conn = capped(c, release)
		k.woken.Go(func() { _ = t.tls.Close() })
	}})
	if err != nil {
		return nil
	}
	k.p = p
	return k
}

// conn wraps c as the server sees a plain caller's connection.
func (k *Parking) conn(c net.Conn) *stallConn {
	sc := &stallConn{Conn: c, wd: Deadline{Wait: k.wait}, park: k}
	sc.head.Begin()
	return sc
}

// capped is a parked connection's new net.Conn, with the CapConnections
// slot it held while parked (release; nil: none).
func capped(c net.Conn, release func()) net.Conn {
	if release == nil {
		return c
	}
	return &cappedConn{Conn: c, release: release}
}

// tlsConn wraps a TLS connection made by TLSServer as the server sees a
// TLS caller's connection, peer what StallWrites' peer read of it.
func (k *Parking) tlsConn(tc *tls.Conn, peer any) *tlsStallConn {
	t := &tlsStallConn{stallConn: k.conn(tc), tls: tc, peer: peer}
	t.tlsc = t
	return t
}

// Parked is the number of connections parked now (0 for a nil Parking).
func (k *Parking) Parked() int {
	if k == nil {
		return 0
	}
	return k.p.Parked()
}

// Close closes the parked connections and parks no more (nothing for a nil
// Parking).
func (k *Parking) Close() {
	if k == nil {
		return
	}
	k.mu.Lock()
	k.stopped = true
	if k.timer != nil {
		k.timer.Stop()
	}
	k.mu.Unlock()
	_ = k.p.Close()
}

// WaitWoken waits for the goroutines serving woken connections, once the
// server has shut down.
func (k *Parking) WaitWoken() {
	if k != nil {
		k.woken.Wait()
	}
}

// idleWait notes, on the connection's own goroutine, that the server now
// waits for its next request (ConnState idle) or has begun reading one
// (active).
func (c *stallConn) idleWait(on bool) {
	c.idle, c.shortened = on, false
	if on {
		c.firstWait, c.waited = !c.waited, true
	}
}

// SetReadDeadline shortens the server's wait for the next request to the
// parker's after when the connection can be parked, remembering the idle
// timeout's deadline for Read.
func (c *stallConn) SetReadDeadline(t time.Time) error {
	if c.park != nil && c.idle {
		c.idleUntil = t
		// The server's wait ends at its now plus the idle timeout: the
		// parker's after from that now is read off it, without a clock
		// read per request.
		after := c.parkedAfter()
		soon := t.Add(after - c.park.idle)
		if t.IsZero() {
			soon = time.Now().Add(after)
		}
		if t.IsZero() || soon.Before(t) {
			t, c.shortened = soon, true
		}
	}
	return c.Conn.SetReadDeadline(t)
}

// parkedAfter is how long the server waited for the connection's next
// request before it gave up to park it: the parker keeps it for the rest
// of the idle timeout.
func (c *stallConn) parkedAfter() time.Duration {
	if c.firstWait {
		return c.park.first
	}
	return c.park.after
}

// parks reports whether a read that ended with err, having read nothing,
// ended the shortened wait for the next request before the idle timeout:
// the connection is to be parked.
func (c *stallConn) parks(n int, err error) bool {
	if n > 0 || !c.shortened || !c.idle || len(c.peeked) > 0 || !isTimeout(err) {
		return false
	}
	return c.idleUntil.IsZero() || time.Now().Before(c.idleUntil)
}

// The life of a connection that may be parked (stallConn.life): Read gives
// up its wait to park it (parking), and the Close that follows hands it to
// the parker (parked), after which closing it again, from the server or a
// drain, must touch nothing: its socket is the parker's, or the connection
// it woke as. Closed otherwise.
const (
	connOpen int32 = iota
	connParking
	connParked
	connClosed
)

// Close closes the connection, or parks it when its wait for the next
// request was given up (errParked): its socket alone, its CapConnections
// slot still held (given back when the parker closes it, or by the
// connection it wakes as). A connection the parker cannot take is closed.
// Once parked, Close does nothing.
func (c *stallConn) Close() error {
	for {
		switch st := c.life.Load(); st {
		case connParking:
			if c.life.CompareAndSwap(connParking, connParked) {
				return c.handOver()
			}
		case connParked:
			return nil
		default:
			if c.life.CompareAndSwap(st, connClosed) {
				if c.woken && st == connOpen { // a connection that was parked ends: reclaim counts it
					c.park.parkedOne()
				}
				return c.Conn.Close()
			}
		}
	}
}

// handOver parks the connection, or closes it if the parker cannot take
// it.
func (c *stallConn) handOver() error {
	sock, state := c.Conn, any(nil)
	if c.tlsc != nil { // the socket under it; its TLS state waits with it
		sock, state = c.tlsc.socket().Conn, c.tlsc
	}
	raw, release, ok := parkable(sock)
	if !ok {
		return c.Conn.Close()
	}
	if c.tlsc != nil {
		// Park closes it; Wake, maybe before Park returns, puts the new
		// one in its place.
		c.tlsc.socket().Conn = nil
	}
	if c.park.p.Park(raw, c.park.idle-c.parkedAfter(), release, state) == nil {
		c.park.parkedOne()
	}
	return nil // the parker's now: closed on its error
}

// parkable is the socket under c and what gives back its CapConnections
// slot (nil: none), which c then no longer gives back; false if c has no
// descriptor or was closed already.
func parkable(c net.Conn) (idlepark.Conn, func(), bool) {
	cc, capped := c.(*cappedConn)
	if capped {
		c = cc.Conn
	}
	pc, ok := c.(idlepark.Conn)
	if !ok || !capped {
		return pc, nil, ok
	}
	var release func()
	cc.once.Do(func() { release = cc.release })
	return pc, release, release != nil
}
