package gateway

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/live"
)

// overviewAnswer is the JSON of GET /api/v1/overview (docs/operations.md):
// the live state's snapshot with what the gateway knows besides it.
type overviewAnswer struct {
	Time      string             `json:"time"`
	Instance  overviewInstance   `json:"instance"`
	PeriodS   float64            `json:"period_s"`
	Rules     []live.RuleView    `json:"rules"`
	Findings  []live.Finding     `json:"findings"`
	Protect   *overviewProtect   `json:"protect"`
	Store     overviewStore      `json:"store"`
	Instances []overviewInstance `json:"instances"`
	History   []live.Point       `json:"history"`
}

// overviewInstance is an instance that shares the counters: its id and
// configuration version, whether it is this one, and how many seconds ago
// it was last heard of.
type overviewInstance struct {
	ID      string `json:"id"`
	Version string `json:"version"`
	Self    bool   `json:"self,omitempty"`
	SeenS   *int64 `json:"seen_s,omitempty"`
}

// overviewProtect is protect's throttle now.
type overviewProtect struct {
	InFlight int               `json:"in_flight"`
	Limit    int               `json:"limit"`
	Ceiling  int               `json:"ceiling"`
	Queued   int               `json:"queued"`
	QueueMax int               `json:"queue_max"`
	Shed     map[string]uint64 `json:"shed"`
}

// overviewStore is where the counters are and whether they are shared.
type overviewStore struct {
	Type      string `json:"type"`
	State     string `json:"state"`
	OnFailure string `json:"on_failure"`
	Shared    bool   `json:"shared"`
	Note      string `json:"note"`
}

// overview answers GET /api/v1/overview.
func (g *Gateway) overview(w http.ResponseWriter, _ *http.Request) {
	now := g.opts.Clock.Now()
	cfg := g.config()
	self := overviewInstance{ID: overviewSelfID(), Version: configVersion(cfg)}
	seen := int64(0)
	instances := []overviewInstance{{ID: self.ID, Version: self.Version, Self: true, SeenS: &seen}}
	snap := g.live.Load().Snapshot(now, live.Inputs{OnFailure: cfg.Store.OnFailure.String(),
		Instances: []live.Instance{{ID: self.ID, Version: self.Version}}})
	body, err := json.Marshal(overviewAnswer{Time: now.UTC().Format(time.RFC3339), Instance: self, PeriodS: snap.PeriodS,
		Rules: snap.Rules, Findings: snap.Findings, Protect: g.protectSummary(cfg), Store: g.storeSummary(),
		Instances: instances, History: snap.History})
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
	thr := g.throttle.Load()
	if thr == nil || cfg.Protect == nil {
		return nil
	}
	st := thr.Stats()
	p := &overviewProtect{InFlight: st.InFlight, Limit: st.Limit, Ceiling: st.MaxInFlight, Queued: st.QueueLength,
		QueueMax: cfg.Protect.Queue.MaxLength, Shed: make(map[string]uint64, len(priorities))}
	for _, pr := range priorities {
		var n uint64
		for _, r := range shedReasons {
			n += st.Refused(pr, r)
		}
		p.Shed[pr.String()] = n
	}
	return p
}

// storeSummary says where this instance's counters are and whether other
// instances share them: the memory store's are its own; the Redis store's
// are shared while Redis answers, and its own (on_failure open or local)
// or refused (closed) while it does not.
func (g *Gateway) storeSummary() overviewStore {
	cfg := g.config()
	s := overviewStore{Type: cfg.Store.Type, State: storeState(g.store), OnFailure: cfg.Store.OnFailure.String()}
	if s.Type == "" {
		s.Type = config.DefaultStoreType
	}
	switch {
	case s.State == "shared":
		s.Shared = true
		s.Note = fmt.Sprintf("counters shared on Redis with every instance using the prefix %q", cfg.Store.Redis.Prefix)
	case s.State != "local":
		s.Note = "Redis cannot be reached: on_failure " + s.OnFailure + " decides until it is back"
	default:
		s.Note = "this instance's counters are its own (" + s.Type + " store)"
	}
	return s
}

// configVersion is a short digest of cfg's policy: the same file gives
// the same version on every instance.
func configVersion(cfg *config.File) string {
	data, err := json.Marshal(cfg.Policy)
	if err != nil {
		return "unknown"
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:4])
}

// overviewSelfID names this instance: host, process id and a random
// suffix, made once.
var overviewSelfID = sync.OnceValue(func() string {
	host, err := os.Hostname()
	if err != nil {
		host = "sluice"
	}
	var b [2]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
})
