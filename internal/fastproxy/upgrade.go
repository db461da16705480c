package fastproxy

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// A protocol upgrade (RFC 9110 7.8: Connection: Upgrade, Upgrade:
// websocket, answered 101 Switching Protocols) cannot go over the pooled
// keep-alive client: after the 101 the connection carries another
// protocol's bytes both ways. The gateway asks UpgradeOf whether a passed
// request is one, Dials a connection of its own to the upstream, sends the
// request with Upgrade, and on a 101 hijacks the caller's connection and
// Splices the two until either side closes.

// UpgradeOf returns the protocols a request asks to switch to (its Upgrade
// field) when it is an upgrade the proxy carries: Connection names
// upgrade, Upgrade is set, and there is no body. Nil otherwise, and always
// when one of the protocols is h2c: an upgrade to cleartext HTTP/2 would
// carry the connection's later requests past the limiter as HTTP/2
// streams, so it goes on as a plain request, without Upgrade.
func UpgradeOf(h *fasthttp.RequestHeader) []byte {
	if n := h.ContentLength(); n > 0 || n == -1 {
		return nil
	}
	if !namesUpgrade(h) {
		return nil
	}
	proto := h.Peek("Upgrade")
	if len(bytes.TrimSpace(proto)) == 0 || len(h.PeekAll("Upgrade")) > 1 || listHas(proto, h2c) {
		return nil
	}
	return proto
}

// namesUpgrade reports whether h's Connection fields name upgrade.
func namesUpgrade(h *fasthttp.RequestHeader) bool {
	var named [MaxConnectionNames][]byte // Refuse lets no more through: the list stays on the stack
	return tokenIn(appendConnectionNames(named[:0], h, -1), upgrade)
}

var (
	upgrade = []byte("upgrade")
	h2c     = []byte("h2c")
)

// dial opens a connection of its own to the upstream for an upgrade,
// within the upstream timeout (TLS for an https upstream). Until its 101,
// each read and write on it waits at most the upstream timeout; Abort
// closes it.
func (p *Proxy) dial() (net.Conn, error) {
	d := &net.Dialer{Timeout: p.timeout, KeepAlive: 30 * time.Second}
	var c net.Conn
	var err error
	if p.tls {
		host, _, _ := net.SplitHostPort(p.addr)
		c, err = (&tls.Dialer{NetDialer: d, Config: &tls.Config{ServerName: host}}).Dial("tcp", p.addr)
	} else {
		c, err = d.Dial("tcp", p.addr)
	}
	if err != nil {
		return nil, err
	}
	return p.conns.add(c, p.timeout), nil
}

// Tunnel is an upgraded connection to the upstream, after its 101.
type Tunnel struct {
	up   net.Conn  // closes it (Dial's, known to Abort)
	raw  net.Conn  // under up, without the upstream timeout's deadlines: Splice sets its own
	r    io.Reader // what the upstream sent after the 101, then raw
	head []byte    // the 101 that goes to the caller
}

// newTunnel is the tunnel over up, whose answer r read up to the 101.
func newTunnel(up net.Conn, r *bufio.Reader, head []byte) *Tunnel {
	raw := up
	if uc, ok := up.(*upstreamConn); ok {
		raw = uc.Conn
	}
	ahead, _ := r.Peek(r.Buffered())
	return &Tunnel{up: up, raw: raw, r: io.MultiReader(bytes.NewReader(bytes.Clone(ahead)), raw), head: head}
}

// Upgrade sends the upgrade request ctx serves, as f says and with
// Connection: Upgrade and Upgrade: proto, on a connection of its own to
// the upstream, and reads the answer; connecting, and each write and read
// until the answer, waits at most the upstream timeout. opened (nil: none)
// is told the connection once open; if it returns false the connection is
// closed, as a failure. On a 101 naming one of the protocols asked for,
// Upgrade returns the Tunnel to Splice (ctx is left as it is). On any
// other answer it puts it on ctx as Serve does (Answered: done runs once
// its body has gone; the connection is closed then). Otherwise it answers
// 502 or 504 as Serve does.
func (p *Proxy) Upgrade(ctx *fasthttp.RequestCtx, f *Forwarding, proto []byte, opened func(net.Conn) bool,
	done func(error)) (*Tunnel, Outcome, error) {
	up, err := p.dial()
	if err == nil && opened != nil && !opened(up) {
		_ = up.Close()
		err = net.ErrClosed
	}
	if err != nil {
		return nil, upgradeFailed(ctx, err), err
	}
	req := fasthttp.AcquireRequest()
	defer fasthttp.ReleaseRequest(req)
	f.Build(&ctx.Request.Header, &req.Header, ctx.IsTLS())
	if len(req.Header.Host()) == 0 { // HTTP/1.0 without Host: the upstream's, as Serve sends
		req.Header.SetHost(p.host)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.SetBytesV("Upgrade", proto)
	resp := fasthttp.AcquireResponse()
	resp.StreamBody = true
	resp.SkipBody = ctx.IsHead()
	r := bufio.NewReader(up)
	_, err = up.Write(req.Header.Header())
	if err == nil {
		err = resp.Read(r)
	}
	if err != nil {
		fasthttp.ReleaseResponse(resp)
		_ = up.Close()
		return nil, upgradeFailed(ctx, err), err
	}
	if resp.StatusCode() != fasthttp.StatusSwitchingProtocols {
		p.answer(ctx, resp, func(err error) {
			_ = up.Close()
			if done != nil {
				done(err)
			}
		})
		return nil, Answered, nil
	}
	defer fasthttp.ReleaseResponse(resp)
	got := resp.Header.Peek("Upgrade")
	if len(resp.Header.PeekAll("Upgrade")) != 1 || !listHas(proto, bytes.TrimSpace(got)) {
		_ = up.Close()
		WriteProblem(ctx, fasthttp.StatusBadGateway, "the upstream service switched to a protocol the request did not ask for")
		return nil, UpstreamFailed, errors.New("fastproxy: upstream switched to " + string(got) + ", not " + string(proto))
	}
	return newTunnel(up, r, switchingHead(&resp.Header, &ctx.Response.Header, p.StripResponse)), Answered, nil
}

// upgradeFailed answers an upgrade the upstream did not answer.
func upgradeFailed(ctx *fasthttp.RequestCtx, err error) Outcome {
	if isTimeout(err) {
		WriteProblem(ctx, fasthttp.StatusGatewayTimeout, "the upstream service did not answer in time")
		return UpstreamTimeout
	}
	WriteProblem(ctx, fasthttp.StatusBadGateway, "the upstream service could not be reached")
	return UpstreamFailed
}

// switchingHead writes the 101 that goes to the caller: the upstream's
// fields but the hop-by-hop ones (and those strip names), the fields
// already on the caller's answer (own: the decision's RateLimit fields),
// then Connection: Upgrade and the upstream's Upgrade.
func switchingHead(in, own *fasthttp.ResponseHeader, strip []string) []byte {
	b := append([]byte(nil), "HTTP/1.1 101 Switching Protocols\r\n"...)
	in.SetNoDefaultContentType(true) // a 101 has no Content-Type: All would list fasthttp's default
	conn := responseConnNames(in)
	for k, v := range in.All() {
		if name := b2s(k); connectionField(name) || conn.has(k) || respells(name, strip) {
			continue
		}
		b = append(append(append(append(b, k...), ": "...), v...), "\r\n"...)
	}
	for k, v := range own.All() {
		b = append(append(append(append(b, k...), ": "...), v...), "\r\n"...)
	}
	b = append(append(b, "Connection: Upgrade\r\nUpgrade: "...), bytes.TrimSpace(in.Peek("Upgrade"))...)
	return append(b, "\r\n\r\n"...)
}

// Close closes the upstream's side of the tunnel.
func (t *Tunnel) Close() error { return t.up.Close() }

// Splice writes the 101 to caller, then copies bytes both ways between
// caller and the upstream until either side closes or fails, or no byte
// has moved either way for idle (0: no bound); each write may wait idle
// for its reader. It closes the upstream's side and returns once both
// copies have ended; closing caller or the tunnel ends it at once.
func (t *Tunnel) Splice(caller net.Conn, idle time.Duration) {
	defer t.up.Close()
	_ = caller.SetWriteDeadline(deadline(time.Now(), idle))
	if _, err := caller.Write(t.head); err != nil {
		return
	}
	var last atomic.Int64
	last.Store(time.Now().UnixNano())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		pipe(caller, t.r, t.raw, idle, &last)
		_ = caller.Close() // ends the other copy
	}()
	pipe(t.raw, caller, caller, idle, &last)
	_ = t.up.Close()
	wg.Wait()
}

// pipe copies src (read through r) to dst until either fails or, with
// idle, no byte has moved either way (last) for idle.
func pipe(dst net.Conn, r io.Reader, src net.Conn, idle time.Duration, last *atomic.Int64) {
	buf := make([]byte, 32<<10)
	for {
		_ = src.SetReadDeadline(deadline(time.Unix(0, last.Load()), idle))
		n, err := r.Read(buf)
		if n > 0 {
			now := time.Now()
			last.Store(now.UnixNano())
			_ = dst.SetWriteDeadline(deadline(now, idle))
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil && !(isTimeout(err) && idle > 0 && time.Since(time.Unix(0, last.Load())) < idle) {
			return // ended, failed, or idle: a timeout while the other way moved reads on
		}
	}
}

func deadline(from time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return from.Add(d)
}
