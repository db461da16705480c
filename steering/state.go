package steering

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// State is the operators' document: the overrides and blocks in force and
// the degrade switch, at a version. Every change makes a new version;
// every instance applies the newest it has read.
type State struct {
	// Version counts the changes: 0 is the empty state nobody has changed.
	Version uint64 `json:"version"`
	// Overrides are the overrides and blocks, at most one per target and
	// rule (a block's Rule is ""), sorted by target, then rule.
	Overrides []Entry `json:"overrides"`
	// Degrade is the degrade switch; nil when it is off.
	Degrade *Degrade `json:"degrade,omitempty"`
}

// Entry is one override (a rate for a target on one rule) or block (a
// target refused on every rule).
type Entry struct {
	// Target is a client id, or ip:ADDR[/BITS] for an address range.
	Target string `json:"target"`
	// Rule is the rule whose limit is replaced; "" for a block.
	Rule string `json:"rule,omitempty"`
	// Rate and Burst are the new limit, as configuration writes them
	// ("20/m"); Burst 0 scales the rule's burst to Rate.
	Rate  string `json:"rate,omitempty"`
	Burst int64  `json:"burst,omitempty"`
	// Block refuses the target on every rule (403).
	Block bool `json:"block,omitempty"`
	// Expires is when it ends, by the store's clock; zero: until removed.
	Expires time.Time `json:"expires,omitzero"`
	// Reason, Author and Since say why, who and when it was set.
	Reason string    `json:"reason"`
	Author string    `json:"author"`
	Since  time.Time `json:"since"`
}

// Degrade is the degrade switch turned on: degrade rules refused and low
// priority shed, as if the service were above protect's shed_from.
type Degrade struct {
	Expires time.Time `json:"expires,omitzero"`
	Reason  string    `json:"reason"`
	Author  string    `json:"author"`
	Since   time.Time `json:"since"`
}

// Record is one line of the audit trail: a change, or an expiry.
type Record struct {
	Time    time.Time `json:"time"`
	Version uint64    `json:"version"`
	// Action is set, remove, expire (an override or block ended by
	// itself), degrade_on, degrade_off, degrade_expire, or restore (the
	// store had lost the state, and an instance wrote back the one it
	// applied).
	Action string `json:"action"`
	Target string `json:"target,omitempty"`
	Rule   string `json:"rule,omitempty"`
	// From and To describe what was in force before and after, in words.
	From   string `json:"from"`
	To     string `json:"to"`
	Author string `json:"author"`
	Reason string `json:"reason,omitempty"`
}

// Describe says what e does, as the audit trail and logs write it:
// "rate 20/m until 2026-12-02T16:00:00Z", "block until an operator
// removes it".
func (e *Entry) Describe() string {
	if e == nil {
		return "the configuration's limit"
	}
	var b strings.Builder
	if e.Block {
		b.WriteString("block")
	} else {
		fmt.Fprintf(&b, "rate %s", e.Rate)
		if e.Burst > 0 {
			fmt.Fprintf(&b, " burst %d", e.Burst)
		}
	}
	b.WriteString(" " + until(e.Expires))
	return b.String()
}

// until says when something ends: "until 2026-12-02T16:00:00Z", or "until
// an operator removes it".
func until(t time.Time) string {
	if t.IsZero() {
		return "until an operator removes it"
	}
	return "until " + t.UTC().Format(time.RFC3339)
}

// describeDegrade says what the switch is: "on until ...", "off".
func describeDegrade(d *Degrade) string {
	if d == nil {
		return "off"
	}
	return "on " + until(d.Expires)
}

// find returns the index of the entry for target and rule, or -1.
func (s *State) find(target, rule string) int {
	return slices.IndexFunc(s.Overrides, func(e Entry) bool { return e.Target == target && e.Rule == rule })
}

// clone returns a copy of s that shares nothing with it.
func (s State) clone() State {
	s.Overrides = slices.Clone(s.Overrides)
	if s.Degrade != nil {
		d := *s.Degrade
		s.Degrade = &d
	}
	return s
}

// sortEntries orders the entries by target, then rule (a block first).
func (s *State) sortEntries() {
	slices.SortFunc(s.Overrides, func(a, b Entry) int {
		return cmpPair(a.Target, a.Rule, b.Target, b.Rule)
	})
}

func cmpPair(a1, a2, b1, b2 string) int {
	if c := strings.Compare(a1, b1); c != 0 {
		return c
	}
	return strings.Compare(a2, b2)
}

// Expired returns s without what has expired at now, by the store's
// clock, and an audit record of each thing removed.
func (s State) Expired(now time.Time) (State, []Record) {
	var recs []Record
	out := s.clone()
	out.Overrides = out.Overrides[:0]
	for _, e := range s.Overrides {
		if !e.Expires.IsZero() && !now.Before(e.Expires) {
			recs = append(recs, Record{Time: now, Action: "expire", Target: e.Target, Rule: e.Rule,
				From: e.Describe(), To: (*Entry)(nil).Describe(), Author: "sluice", Reason: "expired; set by " + e.Author + ": " + e.Reason})
			continue
		}
		out.Overrides = append(out.Overrides, e)
	}
	if d := s.Degrade; d != nil && !d.Expires.IsZero() && !now.Before(d.Expires) {
		recs = append(recs, Record{Time: now, Action: "degrade_expire", From: describeDegrade(d), To: "off",
			Author: "sluice", Reason: "expired; set by " + d.Author + ": " + d.Reason})
		out.Degrade = nil
	}
	return out, recs
}

// nextExpiry is the earliest expiry in s, by the store's clock; zero if
// nothing expires.
func (s *State) nextExpiry() time.Time {
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, e := range s.Overrides {
		consider(e.Expires)
	}
	if s.Degrade != nil {
		consider(s.Degrade.Expires)
	}
	return next
}
