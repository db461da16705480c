package gateway

import (
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/fastproxy"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/throttle"
)

// route is one service of a snapshot (config.Upstream): where the requests
// its match fits go, with its own connection pool, timeout, series of the
// sluice_upstream_* metrics and, under protect, throttle.
type route struct {
	up       *config.Upstream
	match    policy.Matcher // up's host and path, as a rule's match
	proxy    *fastproxy.Proxy
	throttle *throttle.Throttle // nil: no protect for this service

	seconds   prometheus.Observer
	errors    prometheus.Counter
	responses *prometheus.CounterVec // by code
}

// newRoutes returns the routes of cfg's services, keeping old's proxies to
// the same URL with the same timeout (and their idle connections).
func (g *Gateway) newRoutes(cfg *config.File, old *snapshot) []*route {
	routes := make([]*route, 0, len(cfg.Upstreams))
	for i := range cfg.Upstreams {
		up := &cfg.Upstreams[i]
		// Checked when the file was read: nothing is reported here.
		match := policy.CompileMatch("", policy.Match{Host: up.Host, Path: up.Path}, cfg.Policy.CaseInsensitivePaths,
			func(string, string, ...any) {})
		rt := &route{up: up, match: match, proxy: g.newProxy(up, old), throttle: g.throttleOf(up.Name),
			seconds:   g.metrics.upstreamSeconds.WithLabelValues(up.Name),
			errors:    g.metrics.upstreamFails.WithLabelValues(up.Name),
			responses: g.metrics.upstreamResponses.MustCurryWith(prometheus.Labels{"upstream": up.Name})}
		routes = append(routes, rt)
	}
	return routes
}

// routeFor returns the route of the first service whose match fits the
// request of ctx: its Host (an absolute-form target's authority must be
// the same: fastproxy.Refuse) and its path, cleaned as rules see it. Nil when none does, or when
// the snapshot has none (the decision service alone).
func (s *snapshot) routeFor(ctx *fasthttp.RequestCtx) *route {
	if len(s.routes) == 1 && s.routes[0].up.Host == "" && s.routes[0].up.Path == "" {
		return s.routes[0] // upstream, or one service for every request: nothing to look at
	}
	// An absolute-form authority naming another host was refused
	// (fastproxy.Refuse); a host or path that cannot be cleaned goes to the
	// first service, whose decision core answers it 400.
	host, err := policy.CleanHost(b2s(ctx.Request.Header.Host()))
	if err != nil {
		return s.routes[0]
	}
	_, path, err := policy.CleanPath(b2s(ctx.URI().PathOriginal()))
	if err != nil {
		return s.routes[0]
	}
	req := policy.Request{Host: host, Path: path}
	for _, rt := range s.routes {
		if rt.match.Matches(&req) {
			return rt
		}
	}
	return nil
}

// notRouted answers a request no service's match fits: 404, before
// anything is counted.
func (g *Gateway) notRouted(ctx *fasthttp.RequestCtx, hasBody bool) {
	g.metrics.notRouted.Inc()
	g.answer(ctx, fasthttp.StatusNotFound, "no service of this gateway serves this host and path", hasBody)
}

// closeRoutes closes the proxies of old's routes that next (nil: none)
// does not use.
func closeRoutes(old, next *snapshot) {
	for _, rt := range old.routes {
		if next == nil || !slices.ContainsFunc(next.routes, func(n *route) bool { return n.proxy == rt.proxy }) {
			rt.proxy.Close() // another upstream: the old one's idle connections go; requests on it finish
		}
	}
}

// upstreamNames lists the services, for logs.
func upstreamNames(cfg *config.File) string {
	names := make([]string, 0, len(cfg.Upstreams))
	for _, up := range cfg.Upstreams {
		names = append(names, up.Name+"="+up.URL.Redacted())
	}
	return strings.Join(names, ", ")
}

// routeOf is the route the fast path decided v under, nil for none (v nil,
// or a request of the decision services).
func routeOf(v *decision.Verdict) *route {
	if v == nil {
		return nil
	}
	rt, _ := v.Origin().(*route)
	return rt
}
