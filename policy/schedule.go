package policy

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/throttle"
)

// Schedules: limits that change by themselves, by the day of the week and
// the time of day in Policy.Location. A rule's schedule replaces its rate,
// burst, priority or degrade; a plan's replaces its overrides and its
// priority. The first entry of a schedule that is in force at an instant
// applies; none in force, the rule or plan as written. Compiled.At gives
// the compiled policy in force at an instant, and when that may change:
// a front compiles once per change, never per request.
//
// A schedule never changes what a request is counted on: no entry
// replaces an algorithm, a key or a cost, and a plan whose schedule
// overrides a rule counts its callers on that rule under the plan's name
// at every hour (Caller.LimitSource), so that a counter keeps its state
// across a change as it does across a reload (limiter.Reinterpret).
//
// Days and hours, in Policy.Location:
//   - An entry's span starts on each of its Days (every day when none) at
//     From and lasts to To; To at or before From ends the next day
//     ("22:00-06:00" on fri is friday 22:00 to saturday 06:00). The day
//     is the day the span starts.
//   - From is in the span, To is not. From and To both 0 is the whole day.
//   - A wall-clock time that does not exist (the hour skipped when clocks
//     go forward) stands for the next instant that does: 02:30 on the day
//     Europe/Berlin goes from 02:00 to 03:00 is 03:00. A wall-clock time
//     that exists twice (the hour repeated when clocks go back) stands for
//     its first occurrence.

// Schedule is a rule's list of entries; the first in force applies.
type Schedule []ScheduleEntry

// ScheduleEntry is one entry of a rule's schedule: when it is in force
// and what it replaces. A field left nil (or Burst 0) keeps the rule's.
type ScheduleEntry struct {
	// Days are the days the entry's span starts on; empty: every day.
	Days []time.Weekday
	// From and To are times of day, since midnight (0 to 24h): the span
	// is [From, To), To at or before From wrapping past midnight; both 0:
	// the whole day.
	From, To time.Duration
	// Rate replaces the rule's rate. A rule's burst, unless Burst is
	// set, follows it in proportion, as an override's does.
	Rate *Rate
	// Burst replaces the rule's burst (token_bucket, gcra and
	// leaky_bucket only); 0 keeps it.
	Burst int64
	// Priority replaces the rule's priority.
	Priority *throttle.Priority
	// Degrade replaces the rule's degrade.
	Degrade *bool
}

// PlanScheduleEntry is one entry of a plan's schedule, written as a plan
// is: overrides of rules' rates by rule name, and a priority. A rule it
// does not name keeps the plan's override (or the rule's rate); nil
// Priority keeps the plan's.
type PlanScheduleEntry struct {
	// Days, From and To are as ScheduleEntry's.
	Days     []time.Weekday
	From, To time.Duration
	// Limits replace the plan's overrides of these rules' rates (rate
	// rules only: a schedule never changes requests in flight).
	Limits map[string]Rate
	// Priority replaces the plan's priority.
	Priority *throttle.Priority
}

// span is when an entry is in force.
type span struct {
	days     []time.Weekday
	from, to time.Duration
}

func (e ScheduleEntry) span() span     { return span{e.Days, e.From, e.To} }
func (e PlanScheduleEntry) span() span { return span{e.Days, e.From, e.To} }

// When writes the entry's days and hours as configuration does, days
// first: "mon-fri 08:00-18:00", "every day 22:00-06:00", "sat,sun all
// day".
func (e ScheduleEntry) When() string { return e.span().String() }

// When writes the entry's days and hours, as ScheduleEntry.When does.
func (e PlanScheduleEntry) When() string { return e.span().String() }

// on reports whether the span starts on weekday w.
func (s span) on(w time.Weekday) bool { return len(s.days) == 0 || slices.Contains(s.days, w) }

// interval returns the span that starts on day (a UTC midnight standing
// for a date in loc): empty (start not before end) when the clocks'
// change swallows it.
func (s span) interval(day time.Time, loc *time.Location) (start, end time.Time) {
	from, to := s.from, s.to
	if from == 0 && to == 0 {
		to = 24 * time.Hour
	}
	endDay := day
	if to <= from {
		endDay = day.AddDate(0, 0, 1)
	}
	return wallClock(day, from, loc), wallClock(endDay, to, loc)
}

// covers reports whether t is in one of the span's intervals: one that
// starts on t's date or on the day before (no interval lasts longer).
func (s span) covers(t time.Time, loc *time.Location) bool {
	today := localDate(t, loc)
	for _, day := range [2]time.Time{today.AddDate(0, 0, -1), today} {
		if !s.on(day.Weekday()) {
			continue
		}
		if start, end := s.interval(day, loc); !t.Before(start) && t.Before(end) {
			return true
		}
	}
	return false
}

// localDate is t's date in loc, as a UTC midnight (whose Weekday is the
// date's).
func localDate(t time.Time, loc *time.Location) time.Time {
	y, m, d := t.In(loc).Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// wallClock is the instant, in loc, at which the clocks read since past
// midnight of day (a UTC midnight standing for a date). A reading that
// does not exist there (skipped when the clocks go forward) is the next
// one that does, the instant of the change; one that exists twice (when
// they go back) is the first.
func wallClock(day time.Time, since time.Duration, loc *time.Location) time.Time {
	w := day.Add(since) // the reading, written as if in UTC
	var first time.Time
	for _, probe := range [...]time.Duration{-48 * time.Hour, 0, 48 * time.Hour} {
		_, off := w.Add(probe).In(loc).Zone()
		u := w.Add(-time.Duration(off) * time.Second)
		if reads(u.In(loc), w) && (first.IsZero() || u.Before(first)) {
			first = u
		}
	}
	if !first.IsZero() {
		return first.In(loc)
	}
	// In the gap: read in the zone before the change, w is an instant
	// after it, in the zone that starts with the change.
	_, before := w.Add(-48 * time.Hour).In(loc).Zone()
	u := w.Add(-time.Duration(before) * time.Second).In(loc)
	if start, _ := u.ZoneBounds(); !start.IsZero() && !start.After(u) {
		return start.In(loc)
	}
	return u
}

// reads reports whether the clocks read w (written as if in UTC) at t.
func reads(t, w time.Time) bool {
	y, m, d := t.Date()
	h, mi, s := t.Clock()
	return time.Date(y, m, d, h, mi, s, t.Nanosecond(), time.UTC).Equal(w)
}

// horizon is how many days ahead a schedule's next change is looked for:
// two weeks, so that a change is found even when the clocks' change
// swallows the only interval of one week.
const horizon = 15

// inForce returns the index of the first of spans in force at t, -1 when
// none is.
func inForce(spans []span, t time.Time, loc *time.Location) int {
	for i, s := range spans {
		if s.covers(t, loc) {
			return i
		}
	}
	return -1
}

// nextChange returns the first instant after t at which inForce(spans)
// is another entry than at t, in loc; the zero Time if it never is.
func nextChange(spans []span, t time.Time, loc *time.Location) time.Time {
	now := inForce(spans, t, loc)
	var bounds []time.Time
	first := localDate(t, loc).AddDate(0, 0, -1)
	for k := range horizon + 1 {
		day := first.AddDate(0, 0, k)
		for _, s := range spans {
			if !s.on(day.Weekday()) {
				continue
			}
			if start, end := s.interval(day, loc); start.Before(end) {
				bounds = append(bounds, start, end)
			}
		}
	}
	slices.SortFunc(bounds, func(a, b time.Time) int { return a.Compare(b) })
	for _, b := range bounds {
		if b.After(t) && inForce(spans, b, loc) != now {
			return b.In(loc)
		}
	}
	return time.Time{}
}

// String writes the span as configuration does, days first: "mon-fri
// 08:00-18:00", "every day 22:00-06:00", "sat,sun all day".
func (s span) String() string {
	hours := "all day"
	if s.from != 0 || s.to != 0 {
		hours = clockText(s.from) + "-" + clockText(s.to)
	}
	return daysText(s.days) + " " + hours
}

// clockText writes a time of day as HH:MM (HH:MM:SS when it has seconds).
func clockText(d time.Duration) string {
	h, m, s := d/time.Hour, d%time.Hour/time.Minute, d%time.Minute/time.Second
	if s != 0 {
		return fmt.Sprintf("%02d:%02d:%02d", h, m, s)
	}
	return fmt.Sprintf("%02d:%02d", h, m)
}

var dayNames = [7]string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}

// DayName returns day as configuration writes it: "mon" to "sun"; "" for
// a number that is no day.
func DayName(day time.Weekday) string {
	if day < time.Sunday || day > time.Saturday {
		return ""
	}
	return dayNames[day]
}

// daysText writes days from Monday on, runs of three or more as a range:
// "mon-fri", "sat,sun", "mon,wed-fri"; "every day" for none or all.
func daysText(days []time.Weekday) string {
	var in [7]bool // Monday first
	for _, d := range days {
		if d >= time.Sunday && d <= time.Saturday {
			in[(d+6)%7] = true
		}
	}
	if len(days) == 0 || in == [7]bool{true, true, true, true, true, true, true} {
		return "every day"
	}
	name := func(i int) string { return dayNames[(i+1)%7] }
	var parts []string
	for i := 0; i < 7; i++ {
		if !in[i] {
			continue
		}
		j := i
		for j+1 < 7 && in[j+1] {
			j++
		}
		switch {
		case j-i >= 2:
			parts = append(parts, name(i)+"-"+name(j))
		case j > i:
			parts = append(parts, name(i), name(j))
		default:
			parts = append(parts, name(i))
		}
		i = j
	}
	return strings.Join(parts, ",")
}

// applyEntry returns rule r with entry e's replacements: its rate (the
// burst following in proportion unless e sets one), burst, priority and
// degrade.
func applyEntry(r Rule, e ScheduleEntry) Rule {
	if e.Rate != nil {
		if r.Burst > 0 && r.Rate.N > 0 {
			r.Burst = scaleBurst(r.Burst, r.Rate.N, e.Rate.N)
		}
		r.Rate = *e.Rate
	}
	if e.Burst > 0 {
		r.Burst = e.Burst
	}
	if e.Priority != nil {
		r.Priority = new(*e.Priority)
	}
	if e.Degrade != nil {
		r.Degrade = *e.Degrade
	}
	return r
}

// applyPlanEntry returns plan pl with entry e's overrides and priority.
func applyPlanEntry(pl Plan, e PlanScheduleEntry) Plan {
	limits := maps.Clone(pl.Limits)
	if limits == nil {
		limits = map[string]Rate{}
	}
	maps.Copy(limits, e.Limits)
	pl.Limits = limits
	if e.Priority != nil {
		pl.Priority = new(*e.Priority)
	}
	return pl
}

// schedulesRule reports whether an entry of pl's schedule overrides rule:
// then the plan's callers count on that rule under the plan's name at
// every hour, as they would with an override of it in the plan itself.
func (pl Plan) schedulesRule(rule string) bool {
	for _, e := range pl.Schedule {
		if _, ok := e.Limits[rule]; ok {
			return true
		}
	}
	return false
}

func ruleSpans(s Schedule) []span {
	out := make([]span, len(s))
	for i, e := range s {
		out[i] = e.span()
	}
	return out
}

func planSpans(s []PlanScheduleEntry) []span {
	out := make([]span, len(s))
	for i, e := range s {
		out[i] = e.span()
	}
	return out
}

// cloneSchedules copies the schedules of p's rules and plans (p's rules
// and plans already copied by clonePolicy), so that the compiled policy
// shares nothing a program may change.
func cloneSchedules(p *Policy) {
	for i := range p.Rules {
		s := slices.Clone(p.Rules[i].Schedule)
		for j := range s {
			e := &s[j]
			e.Days = slices.Clone(e.Days)
			if e.Rate != nil {
				e.Rate = new(*e.Rate)
			}
			if e.Priority != nil {
				e.Priority = new(*e.Priority)
			}
			if e.Degrade != nil {
				e.Degrade = new(*e.Degrade)
			}
		}
		p.Rules[i].Schedule = s
	}
	for name, pl := range p.Plans {
		s := slices.Clone(pl.Schedule)
		for j := range s {
			e := &s[j]
			e.Days = slices.Clone(e.Days)
			e.Limits = maps.Clone(e.Limits)
			if e.Priority != nil {
				e.Priority = new(*e.Priority)
			}
		}
		pl.Schedule = s
		p.Plans[name] = pl
	}
}
