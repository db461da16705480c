package gateway

import (
	"cmp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/fastfront"
	"github.com/sluice-rl/sluice/internal/fastproxy"
	"github.com/sluice-rl/sluice/policy"
)

// route is one service of a snapshot (config.Upstream): where the requests
// its match fits go (the front's Route: its own connection pool, timeout,
// sluice_upstream_errors_total series and, under protect, Throttle), with
// its series of the other sluice_upstream_* metrics.
type route struct {
	fastfront.Route // Origin: the route itself
	up              *config.Upstream

	seconds   prometheus.Observer
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
		rt := &route{up: up, seconds: g.metrics.upstreamSeconds.WithLabelValues(up.Name),
			responses: g.metrics.upstreamResponses.MustCurryWith(prometheus.Labels{"upstream": up.Name})}
		rt.Route = fastfront.Route{Name: up.Name, URL: up.URL, Match: match, All: up.Host == "" && up.Path == "",
			Proxy: g.newProxy(up, old), Throttle: g.throttleOf(up.Name),
			Errors: g.metrics.upstreamFails.WithLabelValues(up.Name), Origin: rt}
		routes = append(routes, rt)
	}
	return routes
}

// closeRoutes closes the proxies of old's routes that next (nil: none)
// does not use.
func closeRoutes(old, next *snapshot) {
	for _, rt := range old.routes {
		if next == nil || !slices.ContainsFunc(next.routes, func(n *route) bool { return n.Proxy == rt.Proxy }) {
			rt.Proxy.Close() // another upstream: the old one's idle connections go; requests on it finish
		}
	}
}

// newProxy returns the fast path's proxy to up: the one in force when it
// goes to the same URL with the same timeout (keeping its connections),
// else a new one.
func (g *Gateway) newProxy(up *config.Upstream, old *snapshot) *fastproxy.Proxy {
	timeout := cmp.Or(up.Timeout, g.server.UpstreamTimeout)
	if old != nil {
		for _, rt := range old.routes {
			if rt.up.URL.String() == up.URL.String() && cmp.Or(rt.up.Timeout, g.server.UpstreamTimeout) == timeout {
				return rt.Proxy
			}
		}
	}
	return fastfront.NewProxy(up.URL, timeout)
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
