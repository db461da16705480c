package gateway

import (
	"encoding/json"
	"net/http"
	"time"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/live"
)

// overviewAnswer is the JSON of GET /api/v1/overview (docs/operations.md):
// the live state's snapshot with what the gateway knows besides it.
type overviewAnswer struct {
	Time      string           `json:"time"`
	Instance  overviewInstance `json:"instance"`
	PeriodS   float64          `json:"period_s"`
	Rules     []live.RuleView  `json:"rules"`
	Findings  []live.Finding   `json:"findings"`
	Protect   *overviewProtect `json:"protect"`
	Store     StoreInfo        `json:"store"`
	Instances []InstanceInfo   `json:"instances"`
	History   []live.Point     `json:"history"`
	Signals   []signalView     `json:"signals"`
	Degraded  degradedView     `json:"degraded"`
	// Runtime is the run-time overrides, blocks and degrade switch in
	// force here, with the version applied and whether it is current.
	Runtime runtimeJSON `json:"runtime"`
}

// overviewInstance is this instance: its id and configuration version.
type overviewInstance struct {
	ID      string `json:"id"`
	Version string `json:"version"`
}

// overviewProtect is protect's throttles now: the services under protect
// together and, with more than one, each (Services).
type overviewProtect struct {
	// Upstream names the service, in Services.
	Upstream string            `json:"upstream,omitempty"`
	InFlight int               `json:"in_flight"`
	Limit    int               `json:"limit"`
	Ceiling  int               `json:"ceiling"`
	Queued   int               `json:"queued"`
	QueueMax int               `json:"queue_max"`
	Shed     map[string]uint64 `json:"shed"`
	Services []overviewProtect `json:"services,omitempty"`
}

// overview answers GET /api/v1/overview.
func (g *Gateway) overview(w http.ResponseWriter, r *http.Request) {
	now := g.opts.Clock.Now()
	cfg := g.config()
	insts := g.instances(r.Context())
	seen := make([]live.Instance, 0, len(insts))
	for _, in := range insts {
		if in.Self || in.Gossip == nil { // gossip members announce no rules
			seen = append(seen, live.Instance{ID: in.ID, Version: in.Version, Rules: in.Rules})
		}
	}
	snap := g.live.Load().Snapshot(now, live.Inputs{OnFailure: cfg.Store.OnFailure.String(), Instances: seen})
	self := g.self()
	body, err := json.Marshal(overviewAnswer{Time: now.UTC().Format(time.RFC3339),
		Instance: overviewInstance{ID: self.ID, Version: self.Version}, PeriodS: snap.PeriodS,
		Rules: snap.Rules, Findings: snap.Findings, Protect: g.protectSummary(cfg), Store: g.storeInfo(),
		Instances: insts, History: snap.History, Signals: g.signalsOverview(), Degraded: g.degradedOverview(),
		Runtime: g.runtimeSummary()})
	if err != nil { // plain values: cannot happen
		writeText(w, http.StatusInternalServerError, "overview: "+err.Error()+"\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(body)
}

// protectSummary is protect's throttle now; nil without protect.
func (g *Gateway) protectSummary(cfg *config.File) *overviewProtect {
	thrs := g.throttlesNow()
	if len(thrs) == 0 {
		return nil
	}
	all := &overviewProtect{Shed: make(map[string]uint64, len(priorities))}
	for _, s := range thrs {
		st := s.thr.Stats()
		p := overviewProtect{Upstream: s.name, InFlight: st.InFlight, Limit: st.Limit, Ceiling: st.MaxInFlight, Queued: st.QueueLength,
			Shed: make(map[string]uint64, len(priorities))}
		if up := cfg.UpstreamNamed(s.name); up != nil {
			if pc := protectOf(cfg, up); pc != nil {
				p.QueueMax = pc.Queue.MaxLength
			}
		}
		for _, pr := range priorities {
			var n uint64
			for _, r := range shedReasons {
				n += st.Refused(pr, r)
			}
			p.Shed[pr.String()] = n
			all.Shed[pr.String()] += n
		}
		all.InFlight, all.Limit, all.Ceiling = all.InFlight+p.InFlight, all.Limit+p.Limit, all.Ceiling+p.Ceiling
		all.Queued, all.QueueMax = all.Queued+p.Queued, all.QueueMax+p.QueueMax
		all.Services = append(all.Services, p)
	}
	if len(all.Services) == 1 {
		all.Services = nil // the one service is the whole
	}
	return all
}
