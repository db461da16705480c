package gateway

import (
	"cmp"
	"context"
	"iter"
	"net"
	"net/netip"
	"strings"
	"time"
	"unsafe"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/fastproxy"
	"github.com/sluice-rl/sluice/policy"
)

// serveFast serves one caller's request on the fast data path (Run): the
// decision core decides it, and internal/fastproxy sends it on and streams
// the answer back, under the configuration in force when it arrives: 508
// for a request that came back from sluice's own upstream, the body
// timeout counted from the end of the longest wait a rule or protect's
// queue may impose, and Connection: close on an answer given before the
// body was read.
func (g *Gateway) serveFast(ctx *fasthttp.RequestCtx) {
	g.requestID(ctx)
	g.inflight.Add(1)
	if !g.decideFast(ctx) {
		g.inflight.Add(-1)
	}
	if g.closing.Load() {
		ctx.SetConnectionClose() // shutting down: load balancers take the gateway out
	}
	answerID(ctx)
}

// decideFast is serveFast's work. It reports whether the answer's body is
// still to be streamed, and inflight to be counted down once it has.
func (g *Gateway) decideFast(ctx *fasthttp.RequestCtx) (streaming bool) {
	snap := g.snap.Load()
	if status, detail := fastproxy.Refuse(&ctx.Request.Header); status != 0 {
		g.answer(ctx, status, detail, true)
		g.logEarly(ctx)
		return false
	}
	n := ctx.Request.Header.ContentLength()
	hasBody := n > 0 || n == -1
	var bodyStart, bodyDeadline time.Time
	if hasBody {
		bodyStart = time.Now().Add(snap.maxWait)
		bodyDeadline = bodyStart.Add(g.server.BodyTimeout)
		fastproxy.SetBodyDeadline(ctx, bodyDeadline)
	}
	if g.looped(&ctx.Request.Header) {
		g.loopAnswer(ctx, hasBody)
		g.logEarly(ctx)
		return false
	}
	if b2s(ctx.Request.Header.RequestURI()) == "*" && ctx.IsOptions() {
		ctx.Response.Header.SetContentLength(0) // asterisk-form: about the server, never sent on
		return false
	}
	rt := snap.routeFor(ctx)
	if rt == nil && len(snap.routes) > 0 {
		g.notRouted(ctx, hasBody)
		g.logEarly(ctx)
		return false
	}
	peer := peerOf(ctx)
	dctx := g.reqsCtx()
	if snap.maxWait > 0 && !hasBody { // it may wait: notice its caller leaving
		var stop func()
		if dctx, stop = fastproxy.WatchGone(dctx, ctx); stop != nil {
			defer stop()
		}
	}
	set := snap.settings
	if rt != nil {
		set.Throttle = rt.throttle
	}
	up := g.newUpload(ctx, set.Throttle != nil, hasBody, bodyStart, bodyDeadline) // body.go
	defer up.release()
	// Host is the field the upstream receives; an absolute-form target's
	// authority naming another host was refused (fastproxy.Refuse).
	v := g.engine.Decide(dctx, set, decision.Request{Method: b2s(ctx.Method()),
		Path: b2s(ctx.URI().PathOriginal()), Host: b2s(ctx.Request.Header.Host()), Peer: peer, Header: (*fastHeaders)(&ctx.Request.Header),
		Cert: peerCertOf(ctx), Ready: up.readiness(), Origin: rt})
	if g.uploadFailed(ctx, rt, v, up) {
		return false
	}
	if !v.Pass {
		g.refuseFast(ctx, v, hasBody)
		return false
	}
	if proto := fastproxy.UpgradeOf(&ctx.Request.Header); proto != nil {
		return g.passUpgrade(ctx, snap, rt, v, peer.Addr(), proto) // upgrade.go
	}
	return g.passFast(ctx, snap, rt, v, peer.Addr(), up.bodyOf(ctx, bodyStart, bodyDeadline))
}

// reqsCtx is the context requests are decided under: cancelled, with
// errDraining, when Run's drain timeout passes (a request held for its turn
// or queued is then answered 503).
func (g *Gateway) reqsCtx() context.Context {
	if c := g.reqs.Load(); c != nil {
		return *c
	}
	return context.Background()
}

// refuseFast writes the decision's own answer (400, 401, 403, 429, 503).
func (g *Gateway) refuseFast(ctx *fasthttp.RequestCtx, v *decision.Verdict, hasBody bool) {
	if v.Status == decision.StatusClientGone {
		ctx.SetConnectionClose()
	} else {
		ctx.SetStatusCode(v.Status)
		for _, f := range v.Header {
			ctx.Response.Header.SetBytesV(f.Name, f.Value)
		}
		ctx.Response.SetBody(v.Body)
	}
	if hasBody {
		ctx.SetConnectionClose() // the body is not read: answer at once, however slowly it comes
	}
	g.finish(ctx, v, &decision.Response{Status: v.Status})
}

// passFast sends a passed request on and puts the answer, with the
// decision's RateLimit fields, on ctx; the verdict is finished once the
// answer's body has gone to the caller, or at once when the upstream did
// not answer. It reports whether it counts inflight down itself (the
// upstream answered: once the body has gone). The upstream's latency the
// decision core learns (the adaptive limit, sluice_upstream_seconds) is
// the time to the answer's status less what the upstream waited for the
// caller's body: a slow upload is no slow upstream.
func (g *Gateway) passFast(ctx *fasthttp.RequestCtx, snap *snapshot, rt *route, v *decision.Verdict, peer netip.Addr,
	body *fastproxy.Body) bool {
	hasBody := body != nil
	if rt == nil {
		g.answer(ctx, fasthttp.StatusBadGateway, "the gateway has no upstream", hasBody)
		g.finish(ctx, v, &decision.Response{Passed: true, Status: fasthttp.StatusBadGateway, Failure: decision.UpstreamFailed})
		return false
	}
	if g.cutting.Load() { // the drain timeout has passed: nothing more goes on
		g.answer(ctx, fasthttp.StatusServiceUnavailable, "the gateway is shutting down; retry", hasBody)
		g.finish(ctx, v, &decision.Response{Passed: true, Status: fasthttp.StatusServiceUnavailable, Failure: decision.CallerFailed})
		return false
	}
	var set [2]fastproxy.Field
	fwd := g.forwarding(ctx, snap, rt, v, peer, set[:0])
	for _, f := range v.Header {
		ctx.Response.Header.SetBytesV(f.Name, f.Value)
	}
	start := g.opts.Clock.Now()
	var firstByte time.Duration
	out, err := rt.proxy.Serve(ctx, &fwd, body, func(broke error) { // the one call back, once the answer has gone
		g.bodyFailed(broke)
		lat := g.opts.Clock.Now().Sub(start)
		g.finish(ctx, v, &decision.Response{Passed: true, Status: ctx.Response.StatusCode(),
			Header: (*respHeaders)(&ctx.Response.Header), Latency: lat, FirstByte: cmp.Or(firstByte, upstreamTime(lat, body))})
		g.inflight.Add(-1)
	})
	firstByte = upstreamTime(g.opts.Clock.Now().Sub(start), body)
	if out == fastproxy.Answered {
		return true
	}
	if hasBody {
		ctx.SetConnectionClose()
	}
	failure := g.proxyFailed(ctx, rt, out, err)
	lat := g.opts.Clock.Now().Sub(start)
	g.finish(ctx, v, &decision.Response{Passed: true, Status: ctx.Response.StatusCode(), Latency: lat, FirstByte: upstreamTime(lat, body),
		Failure: failure, Aborted: out == fastproxy.CallerAborted, Unanswered: out == fastproxy.CallerAborted})
	return false
}

// upstreamTime is the part of d, the time from passing a request on, that
// was the upstream's and not spent waiting for the caller's body (at
// least 1ns: 0 would read as none).
func upstreamTime(d time.Duration, body *fastproxy.Body) time.Duration {
	return max(d-body.Waited(), 1)
}

// forwarding is how a passed request goes on (passFast, passUpgrade): its
// caller's forwarding header, the decision's method, target and removed
// fields, then X-Sluice-Client and Sluice-Loop-Mark appended to set (room
// for two keeps them off the heap).
func (g *Gateway) forwarding(ctx *fasthttp.RequestCtx, snap *snapshot, rt *route, v *decision.Verdict, peer netip.Addr,
	set []fastproxy.Field) fastproxy.Forwarding {
	if v.Client != "" {
		set = append(set, fastproxy.Field{Name: policy.ClientHeader, Value: v.Client})
	}
	set = append(set, fastproxy.Field{Name: loopHeader, Value: g.loopMarks(&ctx.Request.Header)})
	return fastproxy.Forwarding{Peer: peer, Trusted: v.PeerTrusted, Forwarded: snap.cfg.Compiled.ForwardedHeader() == policy.Forwarded,
		Method: s2b(v.Method), URI: rt.target(ctx, v.Path), Removed: v.Removed, Strip: loopHeaders, Kept: snap.kept,
		Set: set}
}

// proxyFailed counts and logs a request the proxy could not complete
// (fastproxy has answered it), blaming the side that failed: the caller
// (its body broke off, was malformed or too slow: counted in
// sluice_caller_errors_total) or the upstream (sluice_upstream_errors_total),
// and returns the failure the decision core learns from. Once the drain
// timeout has passed, the answer is 503.
func (g *Gateway) proxyFailed(ctx *fasthttp.RequestCtx, rt *route, out fastproxy.Outcome, err error) decision.Failure {
	switch {
	case g.cutting.Load() && out >= fastproxy.UpstreamTimeout:
		fastproxy.WriteProblem(ctx, fasthttp.StatusServiceUnavailable, "the gateway is shutting down; retry")
		return decision.CallerFailed
	case out == fastproxy.CallerAborted:
		g.metrics.callerErrors.WithLabelValues("aborted").Inc()
		return decision.CallerFailed
	case out == fastproxy.CallerTimeout:
		g.metrics.callerErrors.WithLabelValues("body_timeout").Inc()
		return decision.CallerFailed
	case out == fastproxy.CallerMalformed:
		g.metrics.callerErrors.WithLabelValues("malformed_body").Inc()
		if g.logGate.allow(logSubject{kind: "malformed"}) {
			g.log.Info("malformed request body", "err", err.Error())
		}
		return decision.CallerFailed
	case out == fastproxy.UpstreamSlow:
		g.upstreamFailed(rt, err, "upstream took the request body too slowly")
		return decision.UpstreamTimeout
	case out == fastproxy.UpstreamTimeout:
		g.upstreamFailed(rt, err, "upstream did not answer in time")
		return decision.UpstreamTimeout
	default:
		g.upstreamFailed(rt, err, "upstream unreachable")
		return decision.UpstreamFailed
	}
}

func (g *Gateway) upstreamFailed(rt *route, err error, msg string) {
	rt.errors.Inc()
	if g.logGate.allow(logSubject{kind: "upstream", rule: rt.up.Name}) {
		g.log.Warn(msg, "upstream", rt.up.Name, "url", rt.up.URL.Redacted(), "err", err.Error())
	}
}

// answer writes a problem+json answer of the gateway's own; closing
// says the connection closes after it (a body may be left unread).
func (g *Gateway) answer(ctx *fasthttp.RequestCtx, status int, detail string, closing bool) {
	fastproxy.WriteProblem(ctx, status, detail)
	if closing {
		ctx.SetConnectionClose()
	}
}

// target is the request target that goes to rt's service: its URL's path
// joined with the cleaned path, and the queries of both, as
// httputil.ProxyRequest.SetURL joins them.
func (rt *route) target(ctx *fasthttp.RequestCtx, path string) []byte {
	up := rt.up.URL
	base := strings.TrimSuffix(up.EscapedPath(), "/")
	q := ctx.URI().QueryString()
	if base == "" && up.RawQuery == "" && isTarget(ctx.Request.Header.RequestURI(), path, q) {
		return nil // the caller's own target goes on (Forwarding.URI): nothing to join
	}
	b := make([]byte, 0, len(base)+len(path)+len(up.RawQuery)+len(q)+2)
	b = append(append(b, base...), path...)
	switch {
	case up.RawQuery != "" && len(q) > 0:
		b = append(append(append(append(b, '?'), up.RawQuery...), '&'), q...)
	case up.RawQuery != "":
		b = append(append(b, '?'), up.RawQuery...)
	case len(q) > 0:
		b = append(append(b, '?'), q...)
	}
	return b
}

// isTarget reports whether raw, a request's target as it came, is path
// followed by the query q (if any), and nothing else: no fragment, no
// empty query, not in absolute form.
func isTarget(raw []byte, path string, q []byte) bool {
	n := len(path)
	if len(q) > 0 {
		n += 1 + len(q)
	}
	return len(raw) == n && b2s(raw[:len(path)]) == path && (len(q) == 0 || raw[len(path)] == '?')
}

// newProxy returns the fast path's proxy to up: the one in force when it
// goes to the same URL with the same timeout (keeping its connections),
// else a new one.
func (g *Gateway) newProxy(up *config.Upstream, old *snapshot) *fastproxy.Proxy {
	timeout := cmp.Or(up.Timeout, g.server.UpstreamTimeout)
	if old != nil {
		for _, rt := range old.routes {
			if rt.up.URL.String() == up.URL.String() && cmp.Or(rt.up.Timeout, g.server.UpstreamTimeout) == timeout {
				return rt.proxy
			}
		}
	}
	p := fastproxy.New(up.URL, timeout)
	p.StripResponse = loopHeaders // an upstream echoing request headers must not show callers the mark
	return p
}

// bodyFailed logs, at most once a second, an answer whose body broke off
// on its way (err, nil: it did not): the upstream stopped sending it, or
// the caller went.
func (g *Gateway) bodyFailed(err error) {
	if err != nil && g.logGate.allow(logSubject{kind: "body"}) {
		g.log.Warn("answer body broke off", "err", err.Error())
	}
}

func isLoopHeader(name string) bool {
	return policy.SameHeaderName(name, loopHeader) // Sluice_Loop_Mark too: one header to a CGI-style upstream
}

func peerOf(ctx *fasthttp.RequestCtx) netip.AddrPort {
	if a, ok := ctx.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort()
	}
	return netip.AddrPort{}
}

// fastHeaders reads a request's fields for the decision core, without
// copying: names match ignoring case (fasthttp keeps them normalised).
type fastHeaders fasthttp.RequestHeader

func (f *fastHeaders) Values(dst []string, name string) []string {
	return fieldValues((*fasthttp.RequestHeader)(f).All(), dst, name)
}

// Names lists a name once per field line, repeats included: making them
// unique would compare each name with every one before it, quadratic in
// what a caller sends (9,000 names fit in the header limit).
func (f *fastHeaders) Names(dst []string) []string {
	return fieldNames((*fasthttp.RequestHeader)(f).All(), dst)
}

// respHeaders reads the answer's fields for the decision core's after
// steps (cost_header, an upstream 429's or 503's Retry-After).
type respHeaders fasthttp.ResponseHeader

func (f *respHeaders) Values(dst []string, name string) []string {
	return fieldValues((*fasthttp.ResponseHeader)(f).All(), dst, name)
}

func (f *respHeaders) Names(dst []string) []string {
	return fieldNames((*fasthttp.ResponseHeader)(f).All(), dst)
}

// fieldValues appends the values of the fields in all named name, in
// any case: fastHeaders' and respHeaders' Values.
func fieldValues(all iter.Seq2[[]byte, []byte], dst []string, name string) []string {
	for k, v := range all {
		if len(k) == len(name) && strings.EqualFold(b2s(k), name) {
			dst = append(dst, b2s(v))
		}
	}
	return dst
}

// fieldNames appends the name of each field line in all.
func fieldNames(all iter.Seq2[[]byte, []byte], dst []string) []string {
	for k := range all {
		dst = append(dst, b2s(k))
	}
	return dst
}

// b2s views b as a string without copying: for fields read while the
// request they belong to is served.
func b2s(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// s2b views s as bytes, never written to.
func s2b(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }
