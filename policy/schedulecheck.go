package policy

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sluice-rl/sluice/throttle"
)

// The checks of schedules: each entry's days and hours, what it replaces,
// and every limit it gives, together with every override it meets (a
// plan's, a client's), so that any policy At compiles is valid.

// hasSchedule reports whether a rule or a plan of p has a schedule.
func hasSchedule(p Policy) bool {
	for _, r := range p.Rules {
		if len(r.Schedule) > 0 {
			return true
		}
	}
	for _, pl := range p.Plans {
		if len(pl.Schedule) > 0 {
			return true
		}
	}
	return false
}

// checkSchedules checks every rule's and plan's schedule.
func (c *Compiled) checkSchedules(names map[string]int, fail, failName func(string, string, ...any)) {
	for i := range c.rules {
		for j, e := range c.rules[i].Schedule {
			at := fmt.Sprintf("rules[%d].schedule[%d]", i, j)
			checkSpan(at, e.span(), fail)
			c.checkRuleEntry(at, i, e, fail)
		}
	}
	for _, plan := range slices.Sorted(maps.Keys(c.src.Plans)) {
		for j, e := range c.src.Plans[plan].Schedule {
			at := fmt.Sprintf("plans.%s.schedule[%d]", plan, j)
			checkSpan(at, e.span(), fail)
			c.checkPlanEntry(at, e, names, fail, failName)
		}
	}
}

// checkSpan checks an entry's days (known, none twice) and hours (times
// of day, From before 24:00, From and To apart unless both are 0).
func checkSpan(at string, s span, fail func(string, string, ...any)) {
	seen := map[time.Weekday]bool{}
	for k, d := range s.days {
		path := fmt.Sprintf("%s.days[%d]", at, k)
		switch {
		case d < time.Sunday || d > time.Saturday:
			fail(path, "unknown day %d (mon, tue, wed, thu, fri, sat or sun)", d)
		case seen[d]:
			fail(path, "%s listed twice", dayNames[d])
		}
		seen[d] = true
	}
	const day = 24 * time.Hour
	switch {
	case s.from < 0 || s.from >= day:
		fail(at+".hours", "start %v out of range (a time of day from 00:00 to 23:59)", s.from)
	case s.to < 0 || s.to > day:
		fail(at+".hours", "end %v out of range (a time of day from 00:00 to 24:00)", s.to)
	case s.from == s.to && s.from != 0:
		fail(at+".hours", "starts and ends at %s: the entry would never be in force (such as 08:00-18:00; 22:00-06:00 ends the next day; leave hours out for the whole day)", clockText(s.from))
	}
}

// checkRuleEntry checks entry e of rule i's schedule: it replaces
// something, and only what the rule has.
func (c *Compiled) checkRuleEntry(at string, i int, e ScheduleEntry, fail func(string, string, ...any)) {
	r := c.rules[i].Rule
	if e.Rate == nil && e.Burst == 0 && e.Priority == nil && e.Degrade == nil {
		fail(at, "the entry replaces nothing (give it a rate, burst, priority or degrade)")
		return
	}
	if p := e.Priority; p != nil && (*p < throttle.Low || *p > throttle.Critical) {
		fail(at+".priority", "unknown priority %d (critical, high, normal or low)", *p)
	}
	limit := at + ".rate" // where a problem with the entry's limit is shown
	if e.Rate == nil {
		limit = at + ".burst"
	}
	switch {
	case e.Rate == nil && e.Burst == 0:
	case r.LimitsInFlight():
		fail(limit, "rule %s limits requests in flight: a schedule cannot give it a rate or a burst (an entry may replace its priority or degrade)", r.Name)
	case r.Classifies():
		fail(limit, "rule %s has no rate to replace: it only classifies requests (give the rule a rate; an entry may replace its priority or degrade)", r.Name)
	case e.Burst < 0:
		fail(at+".burst", "%d is negative (a burst is 1 or more; leave it out to keep the rule's)", e.Burst)
	case e.Burst > 0 && !r.Algorithm.HasBurst():
		fail(at+".burst", "a burst applies only to token_bucket, gcra and leaky_bucket (rule %s is %v)", r.Name, r.Algorithm)
	default:
		c.checkEntryLimits(limit, applyEntry(r, e), fail)
	}
}

// checkEntryLimits checks the limits of rule r with a schedule entry
// applied: its own, and every plan's and client's override of it (a plan's
// scheduled overrides are checkPlanEntry's). Problems are shown at path.
func (c *Compiled) checkEntryLimits(path string, r Rule, fail func(string, string, ...any)) {
	l, err := ruleLimit(r, r.Rate)
	if err != nil {
		_, msg := limitProblem(err)
		fail(path, "%s", msg)
		return
	}
	if r.Cost > l.Burst() {
		fail(path, "with this entry in force the rule allows %d at once (%s), less than its cost %d: every request would be refused (a larger rate or burst)",
			l.Burst(), capacityText(l), r.Cost)
	}
	override := func(who string, rate Rate) {
		l, err := ruleLimit(r, rate)
		switch {
		case err != nil:
			_, msg := limitProblem(err)
			fail(path, "with this entry in force, %s's %v of rule %s: %s", who, rate, r.Name, msg)
		case r.Cost > l.Burst():
			fail(path, "with this entry in force, %s's %s allows at most %d at once, less than rule %s's cost %d: every request would be refused",
				who, capacityText(l), l.Burst(), r.Name, r.Cost)
		}
	}
	for _, plan := range slices.Sorted(maps.Keys(c.src.Plans)) {
		if rate, ok := c.src.Plans[plan].Limits[r.Name]; ok {
			override("plan "+plan, rate)
		}
	}
	for _, cl := range c.src.Clients.List {
		if rate, ok := cl.Limits[r.Name]; ok {
			override("client "+cl.ID, rate)
		}
	}
}

// checkPlanEntry checks entry e of a plan's schedule: it replaces
// something, names rate rules only, and each rate it gives is a valid
// limit of its rule whatever entry of the rule's own schedule is in force.
func (c *Compiled) checkPlanEntry(at string, e PlanScheduleEntry, names map[string]int, fail, failName func(string, string, ...any)) {
	if len(e.Limits) == 0 && e.Priority == nil {
		fail(at, "the entry replaces nothing (give it a rule's rate, such as claims: 500/m, or a priority)")
	}
	if p := e.Priority; p != nil && (*p < throttle.Low || *p > throttle.Critical) {
		fail(at+".priority", "unknown priority %d (critical, high, normal or low)", *p)
	}
	for _, rule := range slices.Sorted(maps.Keys(e.Limits)) {
		path := at + "." + rule
		i, ok := names[rule]
		if !ok {
			failName(path, "unknown rule %q (rules: %s)", rule, ruleNames(c.src.Rules))
			continue
		}
		r := c.rules[i].Rule
		switch {
		case r.LimitsInFlight():
			fail(path, "rule %s limits requests in flight: a schedule replaces rates, never a count in flight (override it in the plan itself)", rule)
			continue
		case r.Classifies():
			fail(path, "rule %s has no rate to override: it only classifies requests (give the rule a rate, or remove this override)", rule)
			continue
		}
		c.checkScheduledOverride(path, i, e.Limits[rule], fail)
	}
}

// checkScheduledOverride checks rate as rule i's limit, under the rule as
// written and under each entry of its schedule that changes its limit.
func (c *Compiled) checkScheduledOverride(path string, i int, rate Rate, fail func(string, string, ...any)) {
	r := c.rules[i].Rule
	states, whens := []Rule{r}, []string{""}
	for k, e := range r.Schedule {
		if e.Rate != nil || e.Burst > 0 {
			states, whens = append(states, applyEntry(r, e)), append(whens, fmt.Sprintf(" (with rules[%d].schedule[%d] in force)", i, k))
		}
	}
	for k, s := range states {
		l, err := ruleLimit(s, rate)
		switch {
		case err != nil:
			_, msg := limitProblem(err)
			fail(path, "%s%s", msg, whens[k])
			return
		case s.Cost > l.Burst():
			fail(path, "%s allows at most %d at once, less than rule %s's cost %d%s: every request would be refused (a limit of at least %d at once)",
				capacityText(l), l.Burst(), r.Name, s.Cost, whens[k], s.Cost)
			return
		}
	}
}

// priorityText names a priority in force: "priority high", "no priority".
func priorityText(p *throttle.Priority) string {
	if p == nil {
		return "no priority"
	}
	return "priority " + p.String()
}
