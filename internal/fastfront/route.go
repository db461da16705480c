package fastfront

import (
	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/fastproxy"
	"github.com/sluice-rl/sluice/policy"
)

// routeFor returns the route of the first service whose match fits the
// request of ctx: its Host (an absolute-form target's authority must be
// the same: fastproxy.Refuse) and its path, cleaned as rules see it. Nil
// when none does, or when the snapshot has none (the decision service
// alone).
func (s *Snapshot) routeFor(ctx *fasthttp.RequestCtx) *Route {
	if len(s.Routes) == 1 && s.Routes[0].All {
		return s.Routes[0] // upstream, or one service for every request: nothing to look at
	}
	// An absolute-form authority naming another host was refused
	// (fastproxy.Refuse); a host or path that cannot be cleaned goes to the
	// first service, whose decision core answers it 400.
	host, err := policy.CleanHost(b2s(ctx.Request.Header.Host()))
	if err != nil {
		return s.Routes[0]
	}
	_, path, err := policy.CleanPath(b2s(ctx.URI().PathOriginal()))
	if err != nil {
		return s.Routes[0]
	}
	req := policy.Request{Host: host, Path: path}
	for _, rt := range s.Routes {
		if rt.Match.Matches(&req) {
			return rt
		}
	}
	return nil
}

// notRouted answers a request no service's match fits: 404, before
// anything is counted.
func (f *Front) notRouted(ctx *fasthttp.RequestCtx, hasBody bool) {
	inc(f.counters.NotRouted)
	f.answer(ctx, fasthttp.StatusNotFound, "no service of this gateway serves this host and path", hasBody)
}

// finish tells Options.Finished of the request v decided, as resp says it
// ended, then finishes v.
func (f *Front) finish(ctx *fasthttp.RequestCtx, v *decision.Verdict, resp *decision.Response) {
	if f.finished != nil {
		f.finished(ctx, v, *resp)
	}
	v.Finish(resp)
}

// logEarly tells Options.Finished of a request refused before it was
// decided: malformed (fastproxy.Refuse), come back from sluice's own
// upstream (a loop), or not routed.
func (f *Front) logEarly(ctx *fasthttp.RequestCtx) {
	if f.finished != nil {
		f.finished(ctx, nil, decision.Response{Status: ctx.Response.StatusCode()})
	}
}

// peerCertOf is the verified client certificate of ctx's connection, nil
// without (fastproxy.StallWrites read it: PeerCert).
func peerCertOf(ctx *fasthttp.RequestCtx) *policy.PeerCert {
	if !ctx.IsTLS() {
		return nil // a plain connection: no certificate
	}
	pc, _ := fastproxy.PeerOf(ctx).(*policy.PeerCert)
	return pc
}
