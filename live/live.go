package live

import (
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// Defaults and bounds of Options.
const (
	DefaultTop    = 100
	MaxTop        = 10_000
	DefaultPeriod = 10 * time.Minute
	MinPeriod     = time.Minute
	MaxPeriod     = 24 * time.Hour
	// HistoryLength is how far back Snapshot's History goes, one point a
	// second.
	HistoryLength = 5 * time.Minute
)

// Options configure a Live.
type Options struct {
	// Top is how many counters each of a rule's two sketches lists (most
	// refused, highest share of the limit used). Default DefaultTop; at
	// most MaxTop.
	Top int
	// Period is the sliding period the findings are computed over.
	// Default DefaultPeriod; from MinPeriod to MaxPeriod.
	Period time.Duration
}

// withDefaults fills in zero fields and clamps the others into range.
func (o Options) withDefaults() Options {
	if o.Top <= 0 {
		o.Top = DefaultTop
	}
	o.Top = min(o.Top, MaxTop)
	if o.Period <= 0 {
		o.Period = DefaultPeriod
	}
	o.Period = min(max(o.Period, MinPeriod), MaxPeriod)
	return o
}

// Live is the live state of one gateway: per rule of the policy in force,
// its listed counters and its totals. It is safe for concurrent use.
type Live struct {
	opts Options
	seed maphash.Seed
	set  atomic.Pointer[ruleSet]

	mu      sync.Mutex // guards what Sample records
	samples [historySeconds]sample
	store   periodRing // seconds the store was degraded
}

// ruleSet is the rules of one policy, by index.
type ruleSet struct {
	pol   *policy.Compiled
	rules []*ruleState
}

// New returns a Live for the rules of pol.
func New(pol *policy.Compiled, opts Options) *Live {
	l := &Live{opts: opts.withDefaults(), seed: maphash.MakeSeed()}
	l.SetPolicy(pol)
	return l
}

// Options returns the options in force, defaults filled in.
func (l *Live) Options() Options { return l.opts }

// SetPolicy puts pol's rules in place of the current ones, as a reload
// does. A rule of the same name, key, algorithm and mode keeps what was
// seen of it (its counters, its totals); any other starts empty. Reports
// decided under the old policy that arrive afterwards are counted where
// their rule's name and index still agree.
func (l *Live) SetPolicy(pol *policy.Compiled) {
	old := map[string]*ruleState{}
	if prev := l.set.Load(); prev != nil {
		for _, rs := range prev.rules {
			old[rs.name] = rs
		}
	}
	set := &ruleSet{pol: pol, rules: make([]*ruleState, pol.Rules())}
	for i := range set.rules {
		info := ruleInfo(pol, i)
		if rs := old[info.Name]; rs != nil && rs.info.sameCounting(info) {
			rs.setInfo(info)
			set.rules[i] = rs
			continue
		}
		set.rules[i] = newRuleState(info, l.opts)
	}
	l.set.Store(set)
}

// Observe records one request's report: called from the decision core's
// OnDecision, with the time it was decided. It reads the report only
// while it runs.
func (l *Live) Observe(now time.Time, rep *decision.Report) {
	set := l.set.Load()
	t := now.UnixNano()
	for j := range rep.Rules {
		r := &rep.Rules[j]
		if r.Index < 0 || r.Index >= len(set.rules) {
			continue
		}
		rs := set.rules[r.Index]
		if rs.name != r.Rule { // decided under another policy
			continue
		}
		var h uint64
		if r.Key != (store.Key{}) {
			h = maphash.String(l.seed, r.Key.String())
		}
		rs.observe(t, rep, j, h)
	}
}

// RuleInfo is what the overview shows of a rule's configuration.
type RuleInfo struct {
	// Name is the rule's name; Key what it counts by (client, ip,
	// header:NAME, global); Algorithm and Mode as configured.
	Name      string `json:"name"`
	Key       string `json:"key"`
	Algorithm string `json:"algorithm"`
	Mode      string `json:"mode"`
	// Limit and Window are the rule's own limit as RateLimit-Policy
	// states it (q and w): its rate over its period for the window
	// algorithms, its burst over the time an empty bucket takes to refill
	// for the bucket ones, its slots (Window 0) for a concurrency rule.
	// 0 for a rule that only classifies.
	Limit   int64   `json:"limit"`
	WindowS float64 `json:"window_s"`

	window time.Duration
}

// sameCounting reports whether a rule described by o counts as one
// described by i does, so that what was seen of it still holds.
func (i RuleInfo) sameCounting(o RuleInfo) bool {
	return i.Key == o.Key && i.Algorithm == o.Algorithm && i.Mode == o.Mode
}

// ruleInfo describes rule i of pol.
func ruleInfo(pol *policy.Compiled, i int) RuleInfo {
	r := pol.Rule(i)
	info := RuleInfo{Name: r.Name, Key: r.Key.String(), Mode: r.Mode.String()}
	switch l := pol.RuleLimit(i); {
	case r.LimitsInFlight():
		info.Algorithm, info.Limit = "concurrency", r.Concurrency
	case !l.IsZero():
		info.Algorithm = l.Algorithm().String()
		info.Limit, info.window = l.Rate(), l.Period()
		if l.Algorithm().HasBurst() && l.Rate() > 0 {
			info.Limit = l.Burst()
			info.window = time.Duration(float64(l.Burst()) / float64(l.Rate()) * float64(l.Period()))
		}
	default:
		info.Algorithm = "none"
	}
	info.WindowS = info.window.Seconds()
	return info
}

// usedShare is the share of its limit a decision leaves used, 0 to 1.
func usedShare(d *limiter.Decision) float64 {
	if d.Limit <= 0 {
		return 0
	}
	u := 1 - float64(d.Remaining)/float64(d.Limit)
	return min(max(u, 0), 1)
}
