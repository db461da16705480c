package fastfront

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/fastproxy"
)

// A protocol upgrade (WebSocket) is decided, counted and limited as any
// request; once passed it goes to the upstream on a connection of its own
// (fastproxy.Proxy.Dial). On the upstream's 101 the caller's connection is
// hijacked and the two are spliced until either side closes, or nothing
// moves for idle_timeout; the request's after-steps (leases, protect's
// slot) run when the tunnel ends. Any other answer goes to the caller as a
// plain request's does. A tunnel is no request in flight: a drain gives
// the open tunnels until the drain timeout to end, then closes them.

// passUpgrade is pass for a passed request asking to switch to proto.
// It reports, as pass does, whether it counts inflight down itself.
func (f *Front) passUpgrade(ctx *fasthttp.RequestCtx, snap *Snapshot, rt *Route, v *decision.Verdict, peer netip.Addr,
	proto []byte) bool {
	if rt == nil || f.cutting.Load() {
		return f.pass(ctx, snap, rt, v, peer, nil) // answered 502 or 503, as any request
	}
	start := f.clock.Now()
	t := f.tunnels.add(ctx.Conn())
	var set [2]fastproxy.Field
	fwd := f.forwarding(ctx, snap, rt, v, peer, set[:0]) // Upgrade and Connection: Upgrade are fastproxy.Proxy.Upgrade's
	for _, h := range v.Header {
		ctx.Response.Header.SetBytesV(h.Name, h.Value)
	}
	answerID(ctx) // on the 101 too, which the tunnel writes
	opened := func(up net.Conn) bool { return f.tunnels.setUpstream(t, up) }
	tun, out, err := rt.Proxy.Upgrade(ctx, &fwd, proto, opened, func(broke error) { // refused: once its answer has gone
		f.bodyFailed(broke)
		f.tunnels.remove(t)
		lat := f.clock.Now().Sub(start)
		f.finish(ctx, v, &decision.Response{Passed: true, Status: ctx.Response.StatusCode(),
			Header: (*respHeaders)(&ctx.Response.Header), Latency: lat, FirstByte: lat})
		f.inflight.Add(-1)
	})
	switch {
	case err != nil:
		f.tunnels.remove(t)
		failure := f.proxyFailed(ctx, rt, out, err)
		lat := f.clock.Now().Sub(start)
		f.finish(ctx, v, &decision.Response{Passed: true, Status: ctx.Response.StatusCode(), Latency: lat, FirstByte: lat,
			Failure: failure})
		return false
	case tun == nil:
		return true // the upstream refused the upgrade: its answer streams to the caller
	}
	f.hijack(ctx, t, tun, v, f.clock.Now().Sub(start))
	return false
}

// hijack hands the caller's connection, once the handler has returned, to
// tun.Splice. The verdict is finished, as a 101 whose latency is the time
// to the upstream's 101, when the tunnel ends, or when the server closes
// the connection instead of handing it over (a write failed: connClosed).
func (f *Front) hijack(ctx *fasthttp.RequestCtx, t *tunnel, tun *fastproxy.Tunnel, v *decision.Verdict, lat time.Duration) {
	end := sync.OnceFunc(func() {
		_ = tun.Close()
		f.tunnels.remove(t)
		v.Finish(&decision.Response{Passed: true, Status: fasthttp.StatusSwitchingProtocols, Latency: lat, FirstByte: lat})
	})
	f.tunnels.setEnd(t, end)
	if f.finished != nil { // told as it switches: ctx is not the tunnel's once it ends
		f.finished(ctx, v, decision.Response{Passed: true, Status: fasthttp.StatusSwitchingProtocols, FirstByte: lat})
	}
	ctx.HijackSetNoResponse(true) // Splice writes the 101
	ctx.Hijack(func(c net.Conn) {
		defer end()
		tun.Splice(c, f.idle)
	})
}

// tunnels are a run's upgrades, from their dial to their end, by the
// caller's connection: for a drain to wait for and then close.
type tunnels struct {
	mu      sync.Mutex
	open    map[net.Conn]*tunnel
	closed  bool          // the drain closed them: a new one is closed at once
	changed chan struct{} // a tunnel ended
}

// tunnel is one upgrade.
type tunnel struct {
	caller, upstream net.Conn
	end              func() // once hijacked: closes the upstream's side, finishes the verdict
}

// reset readies ts for a run (Start).
func (ts *tunnels) reset() {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.open, ts.closed, ts.changed = make(map[net.Conn]*tunnel), false, make(chan struct{}, 1)
}

func (ts *tunnels) add(caller net.Conn) *tunnel {
	t := &tunnel{caller: caller}
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if ts.open == nil {
		ts.open, ts.changed = make(map[net.Conn]*tunnel), make(chan struct{}, 1)
	}
	ts.open[caller] = t
	return t
}

// setUpstream records t's upstream connection; false: the tunnels have
// been closed, and up is closed too.
func (ts *tunnels) setUpstream(t *tunnel, up net.Conn) bool {
	ts.mu.Lock()
	closed := ts.closed
	t.upstream = up
	ts.mu.Unlock()
	if closed {
		_ = up.Close()
	}
	return !closed
}

func (ts *tunnels) setEnd(t *tunnel, end func()) {
	ts.mu.Lock()
	t.end = end
	ts.mu.Unlock()
}

func (ts *tunnels) remove(t *tunnel) {
	ts.mu.Lock()
	if ts.open[t.caller] == t {
		delete(ts.open, t.caller)
	}
	changed := ts.changed
	ts.mu.Unlock()
	select {
	case changed <- struct{}{}:
	default:
	}
}

// connClosed ends the tunnel of a caller's connection the server closed
// without handing it to the tunnel (the server's ConnState, StateClosed).
func (ts *tunnels) connClosed(c net.Conn) {
	ts.mu.Lock()
	t := ts.open[c]
	ts.mu.Unlock()
	if t != nil && t.end != nil {
		t.end()
	}
}

// wait waits until no tunnel is open, or ctx ends.
func (ts *tunnels) wait(ctx context.Context) {
	for {
		ts.mu.Lock()
		n, changed := len(ts.open), ts.changed
		ts.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// closeAll closes every tunnel's connections, and those opened later, and
// waits a second at most for the tunnels to end.
func (ts *tunnels) closeAll() {
	ts.mu.Lock()
	ts.closed = true
	var cs []net.Conn
	for _, t := range ts.open {
		cs = append(cs, t.caller)
		if t.upstream != nil {
			cs = append(cs, t.upstream)
		}
	}
	ts.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	ts.wait(ctx)
}
