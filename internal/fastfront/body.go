package fastfront

import (
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/fastproxy"
)

// upload is a request body under protect, so that a caller's upload never
// holds a slot of the service: once the rules have passed the request
// (decision.Request.Ready) a body of at most server.body_buffer bytes is
// read whole, while the process's server.body_buffer_total has room,
// before the request takes its slot; a larger one, or one that finds no
// room, streams to the upstream without a slot, among at most
// server.max_streamed_bodies at once.
type upload struct {
	f         *Front
	ctx       *fasthttp.RequestCtx
	start     time.Time // when the body timeout started
	deadline  time.Time // when it ends
	body      *fastproxy.Body
	err       error // the body could not be read
	full      bool  // it was to stream, and max_streamed_bodies were streaming
	streaming bool  // it holds one of f.streamed
}

// newUpload returns the upload of a request with a body under protect,
// nil for any other (no body, or a service without protect) (its body, if any, streams as it comes: NewBody).
func (f *Front) newUpload(ctx *fasthttp.RequestCtx, throttled, hasBody bool, start, deadline time.Time) *upload {
	if !hasBody || !throttled {
		return nil
	}
	return &upload{f: f, ctx: ctx, start: start, deadline: deadline}
}

// readiness is u's decision.Request.Ready: nil without an upload.
func (u *upload) readiness() func() decision.Readiness {
	if u == nil {
		return nil
	}
	return u.ready
}

func (u *upload) ready() decision.Readiness {
	b, whole, err := u.f.buffers.Read(u.ctx, u.start, u.deadline)
	u.body, u.err = b, err
	switch {
	case err != nil:
		return decision.BodyFailed
	case whole:
		return decision.BodyRead
	case !u.f.takeStreamed():
		u.full = true
		return decision.BodyFailed
	}
	u.streaming = true
	return decision.BodyStreams
}

// takeStreamed takes one of the server.max_streamed_bodies, if one is free.
func (f *Front) takeStreamed() bool {
	for {
		n := f.streamed.Load()
		if n >= f.maxStreamed {
			return false
		}
		if f.streamed.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// bodyOf is the body the request goes on with: what u read, or, without
// an upload or before it was read (the rules refused it: no body goes
// on then), the body as it arrives.
func (u *upload) bodyOf(ctx *fasthttp.RequestCtx, start, deadline time.Time) *fastproxy.Body {
	if u != nil && u.body != nil {
		return u.body
	}
	return fastproxy.NewBody(ctx, start, deadline)
}

// release gives back what u holds, once its request has been sent on
// (or answered without): its buffer, its place among the streamed bodies.
func (u *upload) release() {
	if u == nil {
		return
	}
	u.body.Release()
	if u.streaming {
		u.f.streamed.Add(-1)
		u.streaming = false
	}
}

// failed answers, and finishes v, when u's body could not go on (the
// Verdict says StatusClientGone: decision.BodyFailed): 408, 400 or
// nothing when the body could not be read (counted in
// Counters), 503 with Retry-After when it was to stream
// and max_streamed_bodies were. It reports whether it did.
func (f *Front) uploadFailed(ctx *fasthttp.RequestCtx, rt *Route, v *decision.Verdict, u *upload) bool {
	if u == nil || u.err == nil && !u.full {
		return false
	}
	status := fasthttp.StatusServiceUnavailable
	if u.err != nil {
		out := fastproxy.BodyError(ctx, u.err)
		f.proxyFailed(ctx, rt, out, u.err) // an upload only under a route's protect: rt is set
		status = ctx.Response.StatusCode()
		if out == fastproxy.CallerAborted {
			status = decision.StatusClientGone
		}
	} else {
		ctx.Response.Header.Set("Retry-After", "1")
		f.answer(ctx, status, "too many request bodies are streaming to the service at once; retry", true)
	}
	f.finish(ctx, v, &decision.Response{Status: status})
	return true
}

// BodiesBuffered is the bytes of request bodies read whole under protect
// now (server.body_buffer_total's share in use).
func (f *Front) BodiesBuffered() int64 { return f.buffers.Used() }

// BodiesStreamed is the number of request bodies streaming to the
// upstream without a slot now (of server.max_streamed_bodies).
func (f *Front) BodiesStreamed() int64 { return f.streamed.Load() }
