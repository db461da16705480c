package fastfront

import (
	"context"
	"net"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/internal/fastproxy"
)

// What a run of the front's server (NewServer) and its shutdown need of
// the front, in the order the gateway's Run calls it: Start, SetClosing
// while load balancers notice, then, once the server's Shutdown has
// returned or timed out, WaitTunnels, or InFlight and Cut, WaitAnswered,
// CloseConns; CloseTunnels last.

// Start readies the front for a server's run: nothing closing, nothing
// cut, no tunnel or connection open. stop ends the requests' context once
// the run is over.
func (f *Front) Start() (stop func()) {
	reqs, cancel := context.WithCancelCause(context.Background())
	f.reqs.Store(&reqs)
	f.cancel.Store(&cancel)
	f.closing.Store(false)
	f.cutting.Store(false)
	f.tunnels.reset()
	f.conns.mu.Lock()
	f.conns.open = nil
	f.conns.mu.Unlock()
	return func() { cancel(nil) }
}

// reqsCtx is the context requests are decided under: cancelled, with
// Cut's cause, when the drain timeout passes (a request held for its turn
// or queued is then answered 503).
func (f *Front) reqsCtx() context.Context {
	if c := f.reqs.Load(); c != nil {
		return *c
	}
	return context.Background()
}

// NewServer returns the server of the front's callers (fastproxy.NewServer):
// Serve its handler, t its timeouts, log its own messages' destination.
func (f *Front) NewServer(t fastproxy.Timeouts, log fasthttp.Logger) *fasthttp.Server {
	return fastproxy.NewServer(f.Serve, t, log, f.connChanged)
}

// connChanged is told of a caller's connection opened, closed or hijacked
// (fastproxy.NewServer): it keeps the open connections for CloseConns and
// ends the tunnel of a connection closed before it was handed over.
func (f *Front) connChanged(c net.Conn, st fasthttp.ConnState) {
	f.conns.track(c, st)
	if st == fasthttp.StateClosed {
		f.tunnels.connClosed(c) // closed before a hijack took it (upgrade.go)
	}
}

// SetClosing makes each connection close after its answer (on) while a
// shutdown lets load balancers notice, or no more (off).
func (f *Front) SetClosing(on bool) { f.closing.Store(on) }

// InFlight is the number of requests served now, from their headers read
// to their answer written (a streamed body to its end).
func (f *Front) InFlight() int64 { return f.inflight.Load() }

// Cut ends, once the drain timeout has passed, what is still running:
// requests waiting (held for their turn or queued) are answered 503, as
// are those at the upstream (the upstream connections are closed under
// them: Proxy.Abort), and none goes on any more. cause cancels the
// requests' context.
func (f *Front) Cut(cause error) {
	f.cutting.Store(true)
	if c := f.cancel.Load(); c != nil {
		(*c)(cause)
	}
	for _, rt := range f.snap.Load().Routes {
		rt.Proxy.Abort()
	}
}

// WaitAnswered waits until no request is in flight and every answer is
// written (a handler's answer is written after it returns, so a
// connection closed as soon as no request is in flight may lose its
// answer), or for d, looking every few milliseconds: it runs once, at the
// end of a drain.
func (f *Front) WaitAnswered(d time.Duration) {
	for end := time.Now().Add(d); (f.inflight.Load() > 0 || f.conns.answering()) && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
}

// CloseConns closes the callers' connections still open.
func (f *Front) CloseConns() { f.conns.closeAll() }

// WaitTunnels waits until no tunnel is open, or ctx ends.
func (f *Front) WaitTunnels(ctx context.Context) { f.tunnels.wait(ctx) }

// CloseTunnels closes every tunnel's connections, and those opened later,
// and waits a second at most for the tunnels to end.
func (f *Front) CloseTunnels() { f.tunnels.closeAll() }
