package gateway

import (
	"cmp"

	"github.com/sluice-rl/sluice/store/failover"
)

// StoreInfo is the store as the overview and explain show it: where the
// counters are and whether the instances share them now.
type StoreInfo struct {
	// Type is the configuration's store type, memory or redis; "custom"
	// for a store a program gave the gateway (Options.Store).
	Type string `json:"type"`
	// State is "local" (the memory store), "shared", or "degraded
	// (open|closed|local)" while Redis cannot be reached.
	State string `json:"state"`
	// OnFailure is the configuration's on_failure.
	OnFailure string `json:"on_failure"`
	// Shared reports whether the counters are shared with the other
	// instances right now.
	Shared bool `json:"shared"`
	// Note says in a sentence what that means for the counters.
	Note string `json:"note"`
}

// storeInfo describes the gateway's store now.
func (g *Gateway) storeInfo() StoreInfo {
	sc := g.config().Store
	info := StoreInfo{Type: cmp.Or(sc.Type, "memory"), State: storeState(g.store), OnFailure: sc.OnFailure.String()}
	if !g.ownsStore {
		info.Type = "custom"
	}
	fs, ok := g.store.(*failover.Store)
	switch {
	case !ok:
		info.Note = "this instance's counters are its own (" + info.Type + " store)"
	case !fs.Degraded():
		info.Shared = true
		info.Note = "the counters are shared by every instance on this Redis (prefix " + cmp.Or(sc.Redis.Prefix, "sluice:") + ")"
	default:
		info.Note = degradedNote[info.OnFailure]
	}
	return info
}

// degradedNote says what each on_failure does while Redis is down.
var degradedNote = map[string]string{
	"open":   "Redis cannot be reached: requests pass uncounted (on_failure: open)",
	"closed": "Redis cannot be reached: requests are refused 503 (on_failure: closed)",
	"local":  "Redis cannot be reached: each instance counts its share of each limit on its own (on_failure: local)",
}

// counterKind names whose counter a rule reads now: shared, local (this
// instance's own), or none (on_failure: open or closed while Redis is
// down).
func (s StoreInfo) counterKind() string {
	switch {
	case s.Shared:
		return "shared"
	case s.State == "local" || s.OnFailure == "local":
		return "local"
	}
	return "none"
}
