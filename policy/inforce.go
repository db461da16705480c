package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Location returns the time zone the policy's schedules are read in:
// Policy.Location, or UTC.
func (c *Compiled) Location() *time.Location { return c.origin().loc }

// origin is the policy as compiled from what was written: c, or the
// policy At compiled c from.
func (c *Compiled) origin() *Compiled {
	if c.base != nil {
		return c.base
	}
	return c
}

// At returns the compiled policy in force at t, and the next instant
// after t at which that may change. It is c itself (the policy as
// written) when no schedule entry is in force, else a compiled copy with
// the first entry in force of each rule's and each plan's schedule
// applied, whose Policy is the policy in force. The instant is the zero
// Time when c has no schedule, or one that never changes. Called on a
// copy it answers as on the policy it was made from (compile anew from
// that one's Policy, not from a copy's, whose schedules apply to limits
// already replaced).
//
// The copy keeps every state key of the policy as written (the
// algorithms, the keys, Caller.StateTag and LimitSource): a store
// reinterprets a counter under its new limit, as after a reload. At
// compiles a policy: a front calls it once at each change, not per
// request.
func (c *Compiled) At(t time.Time) (*Compiled, time.Time) {
	in, next, err := c.at(t)
	if err != nil { // unreachable: Compile checked every entry against every limit it meets
		return c.origin(), next
	}
	return in, next
}

// at is At, with the error of compiling the policy in force (which
// Compile's checks of schedules leave none of).
func (c *Compiled) at(t time.Time) (*Compiled, time.Time, error) {
	o := c.origin()
	if !o.scheduled {
		return o, time.Time{}, nil
	}
	rules, plans, next := o.entriesAt(t)
	if !slices.ContainsFunc(rules, func(k int) bool { return k >= 0 }) &&
		!slices.ContainsFunc(slices.Collect(maps.Values(plans)), func(k int) bool { return k >= 0 }) {
		return o, next, nil
	}
	in, err := compile(o.applied(rules, plans), o)
	if err != nil {
		return o, next, err
	}
	return in, next, nil
}

// entriesAt returns the entry in force at t of each rule's schedule (by
// rule index, -1 for none) and of each plan's (by name, plans with a
// schedule only), and the first change after any of them (zero: none).
func (c *Compiled) entriesAt(t time.Time) (rules []int, plans map[string]int, next time.Time) {
	earliest := func(n time.Time) {
		if !n.IsZero() && (next.IsZero() || n.Before(next)) {
			next = n
		}
	}
	rules = make([]int, len(c.src.Rules))
	for i, r := range c.src.Rules {
		spans := ruleSpans(r.Schedule)
		rules[i] = inForce(spans, t, c.loc)
		earliest(nextChange(spans, t, c.loc))
	}
	plans = map[string]int{}
	for name, pl := range c.src.Plans {
		if len(pl.Schedule) > 0 {
			spans := planSpans(pl.Schedule)
			plans[name] = inForce(spans, t, c.loc)
			earliest(nextChange(spans, t, c.loc))
		}
	}
	return rules, plans, next
}

// applied is the policy with the entries given applied: rules' by index,
// plans' by name; -1 applies none.
func (c *Compiled) applied(rules []int, plans map[string]int) Policy {
	p := c.src
	p.Rules = slices.Clone(p.Rules)
	for i, k := range rules {
		if k >= 0 {
			p.Rules[i] = applyEntry(p.Rules[i], p.Rules[i].Schedule[k])
		}
	}
	p.Plans = maps.Clone(p.Plans)
	for name, k := range plans {
		if k >= 0 {
			p.Plans[name] = applyPlanEntry(p.Plans[name], p.Plans[name].Schedule[k])
		}
	}
	return p
}

// ScheduleState is what one rule's or plan's schedule puts in force at an
// instant, and what it puts in force next.
type ScheduleState struct {
	// Rule is the rule's name for a rule's schedule, Plan the plan's for
	// a plan's; the other is "".
	Rule, Plan string
	// Entry is the index of the entry in force (0 for the first), -1 for
	// none; When its days and hours ("mon-fri 08:00-18:00"), "" for none.
	Entry int
	When  string
	// Sets is what is in force, of what the schedule's entries replace:
	// "rate 2/m", "rate 10/s burst 5, priority low", "claims 2000/m,
	// priority high"; with Entry -1, the rule's or plan's own.
	Sets string
	// Next is the instant of the next change, in the policy's Location;
	// the zero Time if there is none. NextEntry, NextWhen and Then are
	// Entry, When and Sets from Next on.
	Next      time.Time
	NextEntry int
	NextWhen  string
	Then      string
}

// ScheduleAt describes, for each rule (in order) and then each plan (by
// name) that has a schedule, the entry in force at t and the next change.
func (c *Compiled) ScheduleAt(t time.Time) []ScheduleState {
	o := c.origin()
	var out []ScheduleState
	for i, r := range o.src.Rules {
		if len(r.Schedule) == 0 {
			continue
		}
		st := o.stateOf(ruleSpans(r.Schedule), t, func(k int) string { return o.ruleSets(i, k) })
		st.Rule = r.Name
		out = append(out, st)
	}
	for _, name := range slices.Sorted(maps.Keys(o.src.Plans)) {
		if s := o.src.Plans[name].Schedule; len(s) > 0 {
			st := o.stateOf(planSpans(s), t, func(k int) string { return o.planSets(name, k) })
			st.Plan = name
			out = append(out, st)
		}
	}
	return out
}

// stateOf fills a ScheduleState of spans at t; sets describes entry k.
func (c *Compiled) stateOf(spans []span, t time.Time, sets func(k int) string) ScheduleState {
	when := func(k int) string {
		if k < 0 {
			return ""
		}
		return spans[k].String()
	}
	k := inForce(spans, t, c.loc)
	st := ScheduleState{Entry: k, When: when(k), Sets: sets(k), NextEntry: -1}
	if st.Next = nextChange(spans, t, c.loc); !st.Next.IsZero() {
		st.NextEntry = inForce(spans, st.Next, c.loc)
		st.NextWhen, st.Then = when(st.NextEntry), sets(st.NextEntry)
	}
	return st
}

// ruleSets describes rule i with entry k of its schedule applied (-1:
// none): the values of the fields some entry replaces.
func (c *Compiled) ruleSets(i, k int) string {
	r := c.rules[i].Rule
	var rate, prio, degrade bool
	for _, e := range r.Schedule {
		rate = rate || e.Rate != nil || e.Burst != 0
		prio, degrade = prio || e.Priority != nil, degrade || e.Degrade != nil
	}
	if k >= 0 {
		r = applyEntry(r, r.Schedule[k])
	}
	var parts []string
	if rate {
		s := "rate " + r.Rate.String()
		if l, err := ruleLimit(r, r.Rate); err == nil && l.Algorithm().HasBurst() {
			s += fmt.Sprintf(" burst %d", l.Burst())
		}
		parts = append(parts, s)
	}
	if prio {
		parts = append(parts, priorityText(r.Priority))
	}
	if degrade {
		parts = append(parts, fmt.Sprintf("degrade %v", r.Degrade))
	}
	return strings.Join(parts, ", ")
}

// planSets describes plan name with entry k of its schedule applied (-1:
// none): the overrides of the rules some entry names, and its priority
// if some entry replaces it.
func (c *Compiled) planSets(name string, k int) string {
	pl := c.src.Plans[name]
	rules := map[string]bool{}
	prio := false
	for _, e := range pl.Schedule {
		for rule := range e.Limits {
			rules[rule] = true
		}
		prio = prio || e.Priority != nil
	}
	if k >= 0 {
		pl = applyPlanEntry(pl, pl.Schedule[k])
	}
	var parts []string
	for _, rule := range slices.Sorted(maps.Keys(rules)) {
		if rate, ok := pl.Limits[rule]; ok {
			parts = append(parts, rule+" "+rate.String())
		} else {
			parts = append(parts, rule+" at the rule's rate")
		}
	}
	if prio {
		parts = append(parts, priorityText(pl.Priority))
	}
	return strings.Join(parts, ", ")
}
