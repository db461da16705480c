package gateway

import (
	"time"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/live"
	"github.com/sluice-rl/sluice/policy"
)

// The gateway's live state (package live) is fed every decision's report
// (observe) and sampled once a second for what it cannot see itself:
// protect's throttle and the store's state (sampleLive, from Run's ticker).
// GET /api/v1/overview reads it (overview.go).

// newLive returns the live state of cfg.
func newLive(cfg *config.File) *live.Live {
	return live.New(cfg.Compiled, liveOptions(cfg))
}

// liveOptions are cfg's live block as package live's options; a File
// built in code, with no live block, gets the defaults.
func liveOptions(cfg *config.File) live.Options {
	if cfg.Live == (config.Live{}) {
		return config.DefaultLive().Options()
	}
	return cfg.Live.Options()
}

// reloadLive puts cfg's policy in force on the live state, as pol (the
// policy in force: cfg's with its schedule and the run-time overrides):
// what was seen of the rules that count as before is kept. A changed live
// block starts afresh (another top or period cannot read the old counts).
func (g *Gateway) reloadLive(cfg *config.File, pol *policy.Compiled) {
	l := g.live.Load()
	if l.Options() != liveOptions(cfg) {
		l = newLive(cfg)
		g.live.Store(l)
	}
	l.SetPolicy(pol)
}

// sampleLive tells the live state, at now, what protect's throttle holds
// and whether the store is degraded.
func (g *Gateway) sampleLive(now time.Time) {
	var s live.Sample
	for _, st := range g.throttlesNow() { // the services under protect, together
		st := st.thr.Stats()
		s.InFlight, s.Limit, s.Ceiling = s.InFlight+st.InFlight, s.Limit+st.Limit, s.Ceiling+st.MaxInFlight
	}
	if d, ok := g.store.(interface{ Degraded() bool }); ok {
		s.StoreDegraded = d.Degraded()
	}
	g.live.Load().Sample(now, s)
}
