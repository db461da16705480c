package fastfront

import (
	"cmp"
	"iter"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"time"
	"unsafe"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/fastproxy"
	"github.com/sluice-rl/sluice/policy"
)

// Serve serves one caller's request, the server's handler
// (fastproxy.NewServer): the decision core decides it, and
// internal/fastproxy sends it on and streams the answer back, under the
// configuration in force when it arrives: 508 for a request that came
// back from sluice's own upstream, the body timeout counted from the end
// of the longest wait a rule or protect's queue may impose, and
// Connection: close on an answer given before the body was read.
func (f *Front) Serve(ctx *fasthttp.RequestCtx) {
	f.requestID(ctx)
	f.inflight.Add(1)
	if !f.decide(ctx) {
		f.inflight.Add(-1)
	}
	if f.closing.Load() {
		ctx.SetConnectionClose() // shutting down: load balancers take the gateway out
	}
	answerID(ctx)
}

// decide is Serve's work. It reports whether the answer's body is still
// to be streamed, and inflight to be counted down once it has.
func (f *Front) decide(ctx *fasthttp.RequestCtx) (streaming bool) {
	snap := f.snap.Load()
	if status, detail := fastproxy.Refuse(&ctx.Request.Header); status != 0 {
		f.answer(ctx, status, detail, true)
		f.logEarly(ctx)
		return false
	}
	n := ctx.Request.Header.ContentLength()
	hasBody := n > 0 || n == -1
	var bodyStart, bodyDeadline time.Time
	if hasBody {
		bodyStart = time.Now().Add(snap.MaxWait)
		bodyDeadline = bodyStart.Add(f.bodyTime)
		fastproxy.SetBodyDeadline(ctx, bodyDeadline)
	}
	if f.looped(&ctx.Request.Header) {
		f.loopAnswer(ctx, snap, hasBody)
		f.logEarly(ctx)
		return false
	}
	if b2s(ctx.Request.Header.RequestURI()) == "*" && ctx.IsOptions() {
		ctx.Response.Header.SetContentLength(0) // asterisk-form: about the server, never sent on
		return false
	}
	rt := snap.routeFor(ctx)
	if rt == nil && len(snap.Routes) > 0 {
		f.notRouted(ctx, hasBody)
		f.logEarly(ctx)
		return false
	}
	peer := CallerAddr(ctx)
	dctx := f.reqsCtx()
	if snap.MaxWait > 0 && !hasBody { // it may wait: notice its caller leaving
		var stop func()
		if dctx, stop = fastproxy.WatchGone(dctx, ctx); stop != nil {
			defer stop()
		}
	}
	set := snap.Settings
	var origin any
	if rt != nil {
		set.Throttle, origin = rt.Throttle, rt.Origin
	}
	up := f.newUpload(ctx, set.Throttle != nil, hasBody, bodyStart, bodyDeadline) // body.go
	defer up.release()
	// Host is the field the upstream receives; an absolute-form target's
	// authority naming another host was refused (fastproxy.Refuse).
	v := f.engine.Decide(dctx, set, decision.Request{Method: b2s(ctx.Method()),
		Path: b2s(ctx.URI().PathOriginal()), Host: b2s(ctx.Request.Header.Host()), Peer: peer, Header: (*fastHeaders)(&ctx.Request.Header),
		Cert: peerCertOf(ctx), Ready: up.readiness(), Origin: origin})
	if f.uploadFailed(ctx, rt, v, up) {
		return false
	}
	if !v.Pass {
		f.refuse(ctx, v, hasBody)
		return false
	}
	if proto := fastproxy.UpgradeOf(&ctx.Request.Header); proto != nil {
		return f.passUpgrade(ctx, snap, rt, v, peer.Addr(), proto) // upgrade.go
	}
	var body *fastproxy.Body // nil: none (fastproxy.NewBody)
	if hasBody {
		body = up.bodyOf(ctx, bodyStart, bodyDeadline)
	}
	return f.pass(ctx, snap, rt, v, peer.Addr(), body)
}

// refuse writes the decision's own answer (400, 401, 403, 429, 503).
func (f *Front) refuse(ctx *fasthttp.RequestCtx, v *decision.Verdict, hasBody bool) {
	if v.Status == decision.StatusClientGone {
		ctx.SetConnectionClose()
	} else {
		ctx.SetStatusCode(v.Status)
		setFields(&ctx.Response.Header, v.Header)
		ctx.Response.SetBody(v.Body)
	}
	if hasBody {
		ctx.SetConnectionClose() // the body is not read: answer at once, however slowly it comes
	}
	f.finish(ctx, v, &decision.Response{Status: v.Status})
}

// pass sends a passed request on and puts the answer, with the
// decision's RateLimit fields, on ctx; the verdict is finished once the
// answer's body has gone to the caller, or at once when the upstream did
// not answer. It reports whether it counts inflight down itself (the
// upstream answered: once the body has gone). The upstream's latency the
// decision core learns (the adaptive limit, sluice_upstream_seconds) is
// the time to the answer's status less what the upstream waited for the
// caller's body: a slow upload is no slow upstream.
func (f *Front) pass(ctx *fasthttp.RequestCtx, snap *Snapshot, rt *Route, v *decision.Verdict, peer netip.Addr,
	body *fastproxy.Body) bool {
	hasBody := body != nil
	if rt == nil {
		f.answer(ctx, fasthttp.StatusBadGateway, "the gateway has no upstream", hasBody)
		f.finish(ctx, v, &decision.Response{Passed: true, Status: fasthttp.StatusBadGateway, Failure: decision.UpstreamFailed})
		return false
	}
	if f.cutting.Load() { // the drain timeout has passed: nothing more goes on
		f.answer(ctx, fasthttp.StatusServiceUnavailable, "the gateway is shutting down; retry", hasBody)
		f.finish(ctx, v, &decision.Response{Passed: true, Status: fasthttp.StatusServiceUnavailable, Failure: decision.CallerFailed})
		return false
	}
	var set [2]fastproxy.Field
	fwd := f.forwarding(ctx, snap, rt, v, peer, set[:0])
	setFields(&ctx.Response.Header, v.Header)
	start := f.clock.Now()
	var firstByte time.Duration
	out, err := rt.Proxy.Serve(ctx, &fwd, body, func(broke error) { // the one call back, once the answer has gone
		f.bodyFailed(broke)
		lat := f.clock.Now().Sub(start)
		f.finish(ctx, v, &decision.Response{Passed: true, Status: ctx.Response.StatusCode(),
			Header: (*respHeaders)(&ctx.Response.Header), Latency: lat, FirstByte: cmp.Or(firstByte, upstreamTime(lat, body))})
		f.inflight.Add(-1)
	})
	firstByte = upstreamTime(f.clock.Now().Sub(start), body)
	if out == fastproxy.Answered {
		return true
	}
	if hasBody {
		ctx.SetConnectionClose()
	}
	failure := f.proxyFailed(ctx, rt, out, err)
	lat := f.clock.Now().Sub(start)
	f.finish(ctx, v, &decision.Response{Passed: true, Status: ctx.Response.StatusCode(), Latency: lat, FirstByte: upstreamTime(lat, body),
		Failure: failure, Aborted: out == fastproxy.CallerAborted, Unanswered: out == fastproxy.CallerAborted})
	return false
}

// upstreamTime is the part of d, the time from passing a request on, that
// was the upstream's and not spent waiting for the caller's body (at
// least 1ns: 0 would read as none).
func upstreamTime(d time.Duration, body *fastproxy.Body) time.Duration {
	if body == nil {
		return max(d, 1) // nothing waited for
	}
	return max(d-body.Waited(), 1)
}

// forwarding is how a passed request goes on (pass, passUpgrade): its
// caller's forwarding header, the decision's method, target and removed
// fields, then X-Sluice-Client and Sluice-Loop-Mark appended to set (room
// for two keeps them off the heap).
func (f *Front) forwarding(ctx *fasthttp.RequestCtx, snap *Snapshot, rt *Route, v *decision.Verdict, peer netip.Addr,
	set []fastproxy.Field) fastproxy.Forwarding {
	if v.Client != "" {
		set = append(set, fastproxy.Field{Name: policy.ClientHeader, Value: v.Client})
	}
	set = append(set, fastproxy.Field{Name: loopHeader, Value: f.loopMarks(&ctx.Request.Header)})
	return fastproxy.Forwarding{Peer: peer, Trusted: v.PeerTrusted, Forwarded: snap.Forwarded,
		Method: s2b(v.Method), URI: rt.target(ctx, v.Path), Removed: v.Removed, Strip: loopHeaders, Kept: snap.Kept,
		Set: set}
}

// proxyFailed counts and logs a request the proxy could not complete
// (fastproxy has answered it), blaming the side that failed: the caller
// (its body broke off, was malformed or too slow: counted in
// Counters) or the upstream (counted in its Route's Errors),
// and returns the failure the decision core learns from. Once the drain
// timeout has passed, the answer is 503.
func (f *Front) proxyFailed(ctx *fasthttp.RequestCtx, rt *Route, out fastproxy.Outcome, err error) decision.Failure {
	switch {
	case f.cutting.Load() && out >= fastproxy.UpstreamTimeout:
		fastproxy.WriteProblem(ctx, fasthttp.StatusServiceUnavailable, "the gateway is shutting down; retry")
		return decision.CallerFailed
	case out == fastproxy.CallerAborted:
		inc(f.counters.CallerAborted)
		return decision.CallerFailed
	case out == fastproxy.CallerTimeout:
		inc(f.counters.CallerBodyTimeout)
		return decision.CallerFailed
	case out == fastproxy.CallerMalformed:
		inc(f.counters.CallerMalformed)
		if f.logs("malformed", "") {
			f.log.Info("malformed request body", "err", err.Error())
		}
		return decision.CallerFailed
	case out == fastproxy.UpstreamSlow:
		f.upstreamFailed(rt, err, "upstream took the request body too slowly")
		return decision.UpstreamTimeout
	case out == fastproxy.UpstreamTimeout:
		f.upstreamFailed(rt, err, "upstream did not answer in time")
		return decision.UpstreamTimeout
	default:
		f.upstreamFailed(rt, err, "upstream unreachable")
		return decision.UpstreamFailed
	}
}

func (f *Front) upstreamFailed(rt *Route, err error, msg string) {
	inc(rt.Errors)
	if f.logs("upstream", rt.Name) {
		f.log.Warn(msg, "upstream", rt.Name, "url", rt.URL.Redacted(), "err", err.Error())
	}
}

// answer writes a problem+json answer of the gateway's own; closing
// says the connection closes after it (a body may be left unread).
func (f *Front) answer(ctx *fasthttp.RequestCtx, status int, detail string, closing bool) {
	fastproxy.WriteProblem(ctx, status, detail)
	if closing {
		ctx.SetConnectionClose()
	}
}

// target is the request target that goes to rt's service: its URL's path
// joined with the cleaned path, and the queries of both, as
// httputil.ProxyRequest.SetURL joins them.
func (rt *Route) target(ctx *fasthttp.RequestCtx, path string) []byte {
	up := rt.URL
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

// NewProxy returns the proxy of a Route to the upstream at u, whose
// timeout bounds connecting and each read and write (fastproxy.New).
func NewProxy(u *url.URL, timeout time.Duration) *fastproxy.Proxy {
	p := fastproxy.New(u, timeout)
	p.StripResponse = loopHeaders // an upstream echoing request headers must not show callers the mark
	return p
}

// bodyFailed logs, at most once a second, an answer whose body broke off
// on its way (err, nil: it did not): the upstream stopped sending it, or
// the caller went.
func (f *Front) bodyFailed(err error) {
	if err != nil && f.logs("body", "") {
		f.log.Warn("answer body broke off", "err", err.Error())
	}
}

func isLoopHeader(name string) bool {
	return policy.SameHeaderName(name, loopHeader) // Sluice_Loop_Mark too: one header to a CGI-style upstream
}

// CallerAddr is the address of ctx's caller: the connection's peer.
func CallerAddr(ctx *fasthttp.RequestCtx) netip.AddrPort {
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
