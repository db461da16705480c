package gateway

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/failover"
	"github.com/sluice-rl/sluice/store/gossip"
	"github.com/sluice-rl/sluice/store/redis"
)

// StoreInfo is the store as the overview and explain show it: where the
// counters are and whether the instances share them now.
type StoreInfo struct {
	// Type is the configuration's store type, memory, redis or gossip; "custom"
	// for a store a program gave the gateway (Options.Store).
	Type string `json:"type"`
	// State is "local" (the memory store), "shared", or "degraded
	// (open|closed|local)" while Redis cannot be reached; with gossip,
	// "shared" or "alone" (no other instance reached).
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
	if gs, ok := g.store.(*gossip.Store); ok {
		n := len(gs.Members())
		info.Shared = n > 1
		info.Note = fmt.Sprintf("each instance counts on its own and tells the others every %v: %d instances, at most limit + %d x %d admitted per window",
			gs.Interval(), n, max(n-1, 0), gs.MaxUnsynced())
		if n == 1 {
			info.Note = "gossip: no other instance reached yet; this instance's counters are its own (and what the others last told it)"
		}
		return info
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

// Heartbeat timing: each instance on Redis announces itself every
// announceEvery, for announceTTL (three missed announcements), in Redis
// TIME.
const (
	announceEvery = 5 * time.Second
	announceTTL   = 3 * announceEvery
)

// InstanceInfo is one instance that shares the counters, as the overview
// lists it.
type InstanceInfo struct {
	ID      string `json:"id"`
	Version string `json:"version"` // the configuration's digest (configVersion)
	Self    bool   `json:"self"`
	// SeenS is how many seconds ago it last announced itself (Redis
	// TIME); 0 for this instance.
	SeenS float64 `json:"seen_s"`
	// Rules is each rule's digest by name (ruleDigests): instances whose
	// digests differ apply different versions of a rule.
	Rules map[string]string `json:"rules,omitempty"`
	// Runtime is the version of the run-time overrides it applies
	// (steering.go), as of its last announcement.
	Runtime uint64 `json:"runtime_version"`
	// Gossip is, with the gossip store, the member as the gossip sees it:
	// its member name, address and state (alive; a member memberlist suspects stays alive here until it is declared dead).
	Gossip *gossip.Member `json:"gossip,omitempty"`
}

// announcer is the Redis store's instance heartbeat, as the failover
// store's Shared store has it.
type announcer interface {
	Announce(ctx context.Context, inst redis.Instance, ttl time.Duration) error
	Instances(ctx context.Context) ([]redis.Instance, error)
}

// heartbeat returns the store's heartbeat, if it has one.
func (g *Gateway) heartbeat() (announcer, bool) {
	fs, ok := g.store.(*failover.Store)
	if !ok {
		return nil, false
	}
	a, ok := fs.Shared().(announcer)
	return a, ok
}

// ConfigVersion is the digest of the configuration in force, as the
// overview and the reload log line name it: instances with the same one
// count alike.
func (g *Gateway) ConfigVersion() string { return g.snap.Load().version }

// self is this instance as it announces itself: its id and the
// configuration in force.
func (g *Gateway) self() InstanceInfo {
	snap := g.snap.Load()
	st, _ := g.steer.State()
	return InstanceInfo{ID: g.instanceID, Version: snap.version, Self: true, Rules: snap.ruleDigests, Runtime: st.Version}
}

// instances lists the instances that share this one's counters, this one
// first: on Redis, those whose heartbeat has not expired; with gossip,
// the members this one knows (named by their member names); on the memory
// store (or while Redis cannot be asked), this one alone.
func (g *Gateway) instances(ctx context.Context) []InstanceInfo {
	self := g.self()
	out := []InstanceInfo{self}
	if gs, ok := g.store.(*gossip.Store); ok {
		for _, m := range gs.Members() {
			if m.Self {
				out[0].Gossip = &m
			} else {
				out = append(out, InstanceInfo{ID: m.Name, Gossip: &m})
			}
		}
		return out
	}
	hb, ok := g.heartbeat()
	if !ok {
		return out
	}
	list, err := hb.Instances(ctx)
	if err != nil {
		return out
	}
	for _, in := range list {
		if in.ID != self.ID {
			out = append(out, InstanceInfo{ID: in.ID, Version: in.Version, Rules: in.Rules, SeenS: seconds(in.Seen), Runtime: in.Runtime})
		}
	}
	return out
}

// announce tells the other instances on Redis (hb) that this one applies
// the configuration in force, now and at every tick until ctx ends (Run
// owns it). A failed announcement is retried at the next tick.
func (g *Gateway) announce(ctx context.Context, hb announcer, tick clock.Ticker) {
	defer tick.Stop()
	for {
		self := g.self()
		_ = hb.Announce(ctx, redis.Instance{ID: self.ID, Version: self.Version, Rules: self.Rules, Runtime: self.Runtime}, announceTTL)
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
		}
	}
}

// RuleDifference is a rule that the instances sharing the counters apply
// in different versions: each of its digests with the instances that
// apply it ("" for instances that have no such rule). It is what
// separate_counters reports: instances that count one caller under
// different limits.
type RuleDifference struct {
	Rule     string
	Versions map[string][]string // rule digest -> instance ids
}

// rulesDiffer lists the rules that insts apply in more than one version,
// by rule name.
func rulesDiffer(insts []InstanceInfo) []RuleDifference {
	names := map[string]bool{}
	for _, in := range insts {
		for name := range in.Rules {
			names[name] = true
		}
	}
	var out []RuleDifference
	for _, name := range slices.Sorted(maps.Keys(names)) {
		versions := map[string][]string{}
		for _, in := range insts {
			versions[in.Rules[name]] = append(versions[in.Rules[name]], in.ID)
		}
		if len(versions) > 1 {
			out = append(out, RuleDifference{Rule: name, Versions: versions})
		}
	}
	return out
}

// configVersion is the digest of a configuration's policy (its rules,
// plans and clients, and the time zone its schedules are read in), in
// short hex: two instances with the same version count alike.
func configVersion(pol policy.Policy) string {
	return digest(struct {
		Policy   policy.Policy
		TimeZone string
	}{pol, zoneName(pol.Location)})
}

// zoneName is the name of a policy's time zone: UTC for nil.
func zoneName(loc *time.Location) string {
	if loc == nil {
		return "UTC"
	}
	return loc.String() // a *time.Location marshals as {}, and compares by its caches
}

// ruleDigests is each rule's digest: the rule as written, with what every
// plan and client overrides of it, so that a change of any limit of the
// rule changes its digest.
func ruleDigests(pol policy.Policy) map[string]string {
	out := make(map[string]string, len(pol.Rules))
	for _, r := range pol.Rules {
		type override struct {
			Name        string
			Rate        policy.Rate
			Concurrency int64
		}
		var overrides []override
		for _, name := range slices.Sorted(maps.Keys(pol.Plans)) {
			p := pol.Plans[name]
			overrides = append(overrides, override{"plan:" + name, p.Limits[r.Name], p.Concurrency[r.Name]})
		}
		for _, c := range pol.Clients.List {
			overrides = append(overrides, override{"client:" + c.ID + " plan:" + c.Plan, c.Limits[r.Name], c.Concurrency[r.Name]})
		}
		out[r.Name] = digest(struct {
			Rule      policy.Rule
			Overrides []override
		}{r, overrides})
	}
	return out
}

// digest is the first 8 hex digits of the SHA-256 of v's JSON (maps in
// key order).
func digest(v any) string {
	b, _ := json.Marshal(v) // the policy's types all marshal
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:4])
}

// newInstanceID names this instance among those on one Redis: host, pid
// and 4 random hex digits (a restarted instance is a new one).
func newInstanceID() string {
	host, _ := os.Hostname()
	var b [2]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", cmp.Or(host, "sluice"), os.Getpid(), hex.EncodeToString(b[:]))
}
