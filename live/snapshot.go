package live

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Sample is what the gateway tells a Live once a second of what it does
// not see itself: protect's throttle and the store's state.
type Sample struct {
	// InFlight, Limit and Ceiling are protect's requests at the upstream,
	// its in-flight limit in force and its max_in_flight; zeros without
	// protect.
	InFlight, Limit, Ceiling int
	// StoreDegraded reports that the store cannot be reached and its
	// failure policy decides.
	StoreDegraded bool
}

type sample struct {
	sec int64
	Sample
}

// degradedSeconds is what Live.store counts: seconds sampled degraded.
const degradedSeconds = 0

// Sample records s, as at now. The gateway calls it once a second.
func (l *Live) Sample(now time.Time, s Sample) {
	t := now.UnixNano()
	sec := t / int64(time.Second)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.samples[sec%int64(historySeconds)] = sample{sec: sec, Sample: s}
	if s.StoreDegraded {
		l.store.add(t, l.width(), degradedSeconds)
	}
}

// width is the width of the period's buckets.
func (l *Live) width() int64 { return int64(l.opts.Period) / periodBuckets }

// Inputs are what Snapshot needs from outside package live.
type Inputs struct {
	// OnFailure is the store's failure policy: open, closed or local.
	OnFailure string
	// Instances are the instances that share the store, this one
	// included; none or one for a store of this instance's own.
	Instances []Instance
}

// Instance is one instance sharing the store, as its heartbeat says.
type Instance struct {
	// ID names the instance; Version is its configuration's digest.
	ID, Version string
	// Rules is the digest of each rule it applies, by name; nil if
	// unknown (Version is compared then).
	Rules map[string]string
}

// Snapshot is what a Live shows at one moment.
type Snapshot struct {
	// PeriodS is the findings' sliding period, in seconds.
	PeriodS float64 `json:"period_s"`
	// Rules are the policy's rules, in its order.
	Rules []RuleView `json:"rules"`
	// Findings are the mistakes recognised over the period; never nil.
	Findings []Finding `json:"findings"`
	// History has one point a second for the last HistoryLength, oldest
	// first.
	History []Point `json:"history"`
}

// RuleView is one rule: its configuration, its requests in the last
// minute, and its listed callers.
type RuleView struct {
	RuleInfo
	// Allowed and Limited count the rule's requests in the last minute,
	// all callers together (limited includes a shadow rule's over-limit
	// requests).
	Allowed uint64 `json:"allowed"`
	Limited uint64 `json:"limited"`
	// Top is the union of the two sketches, most limited first, then
	// highest share used.
	Top []Caller `json:"top"`
}

// Caller is one listed counter of a rule.
type Caller struct {
	// Client is the client id of its last request ("anonymous" for
	// callers without a key); Counted what the rule counts it as (the
	// id, an address, a header's value, all callers together), never an
	// access key.
	Client  string `json:"client"`
	Counted string `json:"counted"`
	// Limit is the limit its last request was decided under; Used the
	// share of it used now, 0 to 1. Source names where that limit comes
	// from: "" for the rule's own, "plan:NAME", "client:ID", or a run-time
	// override ("override:ID", "override:ip:RANGE").
	Limit  int64   `json:"limit"`
	Source string  `json:"source,omitempty"`
	Used   float64 `json:"used"`
	// Allowed and Limited count its requests in the last minute.
	Allowed uint64 `json:"allowed"`
	Limited uint64 `json:"limited"`
	// RetryS is what is left of the Retry-After of its last 429, in
	// whole seconds rounded up; 0 when none is running.
	RetryS int64 `json:"retry_s"`
}

// Point is one second of History.
type Point struct {
	T     int64                 `json:"t"` // Unix seconds
	Rules map[string]RuleSecond `json:"rules"`
	// InFlight, Limit and Ceiling are protect's, as sampled (Sample).
	InFlight int `json:"in_flight"`
	Limit    int `json:"limit"`
	Ceiling  int `json:"ceiling"`
}

// RuleSecond is what a rule decided in one second.
type RuleSecond struct {
	Allowed uint32 `json:"allowed"`
	Limited uint32 `json:"limited"`
}

// Snapshot returns what l shows at now. It holds each rule's mutex while
// it copies that rule, never two at once.
func (l *Live) Snapshot(now time.Time, in Inputs) Snapshot { return l.snapshot(now, in, true) }

// Current is Snapshot without its History: what a metrics scrape reads.
func (l *Live) Current(now time.Time, in Inputs) Snapshot { return l.snapshot(now, in, false) }

func (l *Live) snapshot(now time.Time, in Inputs, history bool) Snapshot {
	t := now.UnixNano()
	set := l.set.Load()
	snap := Snapshot{PeriodS: l.opts.Period.Seconds(), Rules: make([]RuleView, len(set.rules)), Findings: []Finding{}}
	var seconds []secondRing
	if history {
		seconds = make([]secondRing, len(set.rules))
	}
	for i, rs := range set.rules {
		rs.mu.Lock()
		snap.Rules[i] = rs.view(t)
		snap.Findings = append(snap.Findings, rs.findings(t, l.opts.Period)...)
		if history {
			seconds[i] = rs.seconds
		}
		rs.mu.Unlock()
	}
	snap.Findings = append(snap.Findings, l.storeFindings(t, in)...)
	sortFindings(snap.Findings)
	if history {
		snap.History = l.history(t, set, seconds)
	}
	return snap
}

// view is the RuleView of rs at t; rs.mu is held.
func (rs *ruleState) view(t int64) RuleView {
	v := RuleView{RuleInfo: rs.info, Top: make([]Caller, 0, len(rs.index))}
	v.Allowed, v.Limited = rs.seconds.lastMinute(t)
	for _, e := range rs.pool {
		if !e.inRefused && !e.inUsed {
			continue
		}
		c := Caller{Client: e.client, Counted: e.counted, Limit: e.limit, Source: e.source, Used: math.Round(e.usedNow(t)*1000) / 1000}
		c.Allowed, c.Limited = e.minute.sum(t)
		if left := e.retryUntil - t; left > 0 {
			c.RetryS = (left + int64(time.Second) - 1) / int64(time.Second)
		}
		v.Top = append(v.Top, c)
	}
	slices.SortFunc(v.Top, func(a, b Caller) int {
		return cmp.Or(cmp.Compare(b.Limited, a.Limited), cmp.Compare(b.Used, a.Used), cmp.Compare(a.Counted, b.Counted))
	})
	return v
}

// history is the last HistoryLength up to t, a point a second; seconds
// are the rules' rings, copied.
func (l *Live) history(t int64, set *ruleSet, seconds []secondRing) []Point {
	l.mu.Lock()
	samples := l.samples
	l.mu.Unlock()
	now := t / int64(time.Second)
	points := make([]Point, 0, historySeconds)
	for sec := now - int64(historySeconds) + 1; sec <= now; sec++ {
		p := Point{T: sec, Rules: make(map[string]RuleSecond, len(set.rules))}
		for i, rs := range set.rules {
			a, lim := seconds[i].at(sec)
			p.Rules[rs.name] = RuleSecond{Allowed: a, Limited: lim}
		}
		if s := samples[sec%int64(historySeconds)]; s.sec == sec && sec >= 0 {
			p.InFlight, p.Limit, p.Ceiling = s.InFlight, s.Limit, s.Ceiling
		}
		points = append(points, p)
	}
	return points
}
