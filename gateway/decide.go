package gateway

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/store"
)

// Limit returns next behind the gateway's limiter: each request is decided
// under the policy in force when it arrives, with the gateway's store,
// counters, metrics and logs, as a caller of the gateway is. protect's
// throttle is not applied: nothing is proxied. It is what the decision
// service's /check (package check) decides with.
func (g *Gateway) Limit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cfg := g.config()
		settings := httplimit.Settings{Policy: cfg.Compiled, LegacyHeaders: cfg.LegacyHeaders}
		g.limiter.HandlerWith(settings, next).ServeHTTP(w, r)
	})
}

// Stopping makes /readyz answer 503, as Run does when its context ends:
// a program that serves the admin endpoints without Run (the decision
// service alone) calls it when it starts to shut down.
func (g *Gateway) Stopping() { g.ready.Store(false) }

// Store is the gateway's store: the decision service's Envoy gRPC server
// (package rls) decides on it too, so that its counts live beside the
// gateway's, under the same on_failure policy.
func (g *Gateway) Store() store.Store { return g.store }

// Registerer is the registry the admin port's /metrics serves, for the
// decision service's own series.
func (g *Gateway) Registerer() prometheus.Registerer { return g.metrics.registry }
