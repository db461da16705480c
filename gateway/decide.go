package gateway

import (
	"cmp"
	"context"
	"net"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/internal/fastproxy"
	"github.com/sluice-rl/sluice/store"
)

// Decider decides the decision service's requests (/check, package check)
// under the gateway's configuration in force, with its store, clock,
// metrics and logs, as the gateway decides its callers' requests: one
// caller has one counter per rule, whichever way its requests come.
// protect's throttle is not applied: nothing is proxied.
type Decider struct {
	g      *Gateway
	engine *decision.Engine
}

// Decider returns a Decider over g's store.
func (g *Gateway) Decider() (*Decider, error) {
	opts := decision.Options{Store: g.store, Clock: g.opts.Clock, OnFailure: g.opts.Config.Store.OnFailure,
		LeaseTTL:   cmp.Or(g.opts.Config.Store.LeaseTTL, store.DefaultLeaseTTL),
		OnDecision: g.observe}
	if g.renewer != nil {
		opts.Leaser = g.renewer
	}
	e, err := decision.New(opts)
	if err != nil {
		return nil, err
	}
	return &Decider{g: g, engine: e}, nil
}

// Decide decides req under the policy in force; the Verdict must be given
// back with Finish (decision.Engine.Decide).
func (d *Decider) Decide(ctx context.Context, req decision.Request) *decision.Verdict {
	set := d.g.snap.Load().front.Settings
	set.Throttle = nil // nothing is proxied
	return d.engine.Decide(ctx, set, req)
}

// CapConnections lets at most max connections from ln be open at once, as
// server.max_connections caps the gateway's callers: the decision
// service's listeners take the same cap. max <= 0: no cap.
func CapConnections(ln net.Listener, max int) net.Listener { return fastproxy.CapConnections(ln, max) }

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
