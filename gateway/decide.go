package gateway

import (
	"net/http"

	"github.com/sluice-rl/sluice/httplimit"
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
