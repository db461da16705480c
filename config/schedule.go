package config

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
	_ "time/tzdata" // time_zone works without the system's zone database (a scratch container has none)

	"github.com/sluice-rl/sluice/policy"
	"go.yaml.in/yaml/v3"
)

// Schedules (policy.Schedule): a rule's or a plan's schedule entries, with
// their days and hours, and the file's time_zone.

var scheduleFields = []string{"days", "hours", "rate", "burst", "priority", "degrade"}

const (
	hoursSyntax = "HH:MM-HH:MM from 00:00 to 24:00, such as 08:00-18:00, or 22:00-06:00 to end the next day"
	dayList     = "mon, tue, wed, thu, fri, sat, sun"
)

// fullDays are the days' English names, Monday first as dayList.
var fullDays = []string{"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"}

// schedule decodes a rule's schedule: a list of entries, each with days,
// hours and what it replaces (rate, burst, priority, degrade).
func (d *decoder) schedule(n *yaml.Node, path string) policy.Schedule {
	var s policy.Schedule
	for i, en := range d.list(n, path, `schedule entries, such as {days: [mon, tue], hours: "08:00-18:00", rate: 2/m}`) {
		at := index(path, i)
		m := d.fields(en, at, "a schedule entry (days, hours, rate, burst, priority, degrade)", scheduleFields)
		var e policy.ScheduleEntry
		e.Days, e.From, e.To = d.when(m["days"], m["hours"], at)
		if r, ok := d.rate(m["rate"], join(at, "rate")); ok {
			e.Rate = &r
		}
		e.Burst = d.integer(m["burst"], join(at, "burst"), 1, 1<<62, 0, "1 or more; token_bucket, gcra and leaky_bucket only")
		if !isNull(m["priority"]) {
			e.Priority = new(d.priority(m["priority"], join(at, "priority")))
		}
		if !isNull(m["degrade"]) {
			e.Degrade = new(d.boolean(m["degrade"], join(at, "degrade")))
		}
		if e.Rate == nil && e.Burst == 0 && e.Priority == nil && e.Degrade == nil {
			d.replacesNothing(en, at, isNull(m["rate"]) && isNull(m["burst"]) && isNull(m["priority"]) && isNull(m["degrade"]),
				"give it a rate, burst, priority or degrade")
		}
		s = append(s, e)
	}
	return s
}

// replacesNothing reports an entry that replaces nothing at n, unless
// what it gives failed already (none: nothing was given): either way,
// policy.Compile does not report it again.
func (d *decoder) replacesNothing(n *yaml.Node, at string, none bool, give string) {
	if none && !d.failed[at] {
		d.fail(n, at, "the entry replaces nothing (%s)", give)
	}
	d.failed[at] = true
}

// when decodes an entry's days (none: every day) and hours (none: the
// whole day).
func (d *decoder) when(days, hours *yaml.Node, at string) ([]time.Weekday, time.Duration, time.Duration) {
	var out []time.Weekday
	list := d.list(days, join(at, "days"), "days ("+dayList+")")
	if days != nil && days.Kind == yaml.SequenceNode && len(list) == 0 {
		d.fail(days, join(at, "days"), "an empty list (list days such as [mon, tue], or leave days out for every day)")
	}
	for i, dn := range list {
		path := index(join(at, "days"), i)
		s, ok := d.scalar(dn, path, "a day ("+dayList+")")
		if !ok {
			continue
		}
		day, err := parseDay(s)
		if err != nil {
			d.fail(dn, path, "%v", err)
			continue
		}
		out = append(out, day)
	}
	s, ok := d.scalar(hours, join(at, "hours"), "hours ("+hoursSyntax+")")
	if !ok {
		return out, 0, 0
	}
	from, to, err := parseHours(s)
	if err != nil {
		d.fail(hours, join(at, "hours"), "%v", err)
	}
	return out, from, to
}

// parseDay reads a day as configuration writes it: mon to sun, in any
// case.
func parseDay(s string) (time.Weekday, error) {
	lower := strings.ToLower(s)
	for d := time.Sunday; d <= time.Saturday; d++ {
		if lower == policy.DayName(d) {
			return d, nil
		}
	}
	hint := didYouMean(s, strings.Split(dayList, ", "))
	for _, full := range fullDays {
		if len(lower) >= 3 && strings.HasPrefix(full, lower) {
			hint = `did you mean "` + full[:3] + `"? `
		}
	}
	return 0, fmt.Errorf("unknown day %q (%saccepted: %s)", clip(s), hint, dayList)
}

// parseHours reads an entry's hours, HH:MM-HH:MM: the time of day the
// entry starts (00:00 to 23:59) and ends (00:01 to 24:00; at or before
// the start: the next day). Start and end may not be equal: leaving
// hours out is the whole day.
func parseHours(s string) (from, to time.Duration, err error) {
	a, b, ok := strings.Cut(s, "-")
	if !ok {
		return 0, 0, fmt.Errorf("%q is not hours (%s)", clip(s), hoursSyntax)
	}
	if from, err = parseClock(a); err == nil {
		to, err = parseClock(b)
	}
	switch {
	case err != nil:
		return 0, 0, fmt.Errorf("%q: %v (%s)", clip(s), err, hoursSyntax)
	case from == 24*time.Hour:
		return 0, 0, fmt.Errorf("%q: 24:00 only ends an entry (a start from 00:00 to 23:59)", clip(s))
	case from == to:
		return 0, 0, fmt.Errorf("%q starts and ends at the same time: the entry would never be in force (such as 08:00-18:00; 00:00-24:00 or no hours for the whole day)", clip(s))
	}
	return from, to, nil
}

// parseClock reads a time of day, HH:MM: 00:00 to 24:00.
func parseClock(s string) (time.Duration, error) {
	digit := func(c byte) bool { return c >= '0' && c <= '9' }
	if len(s) != 5 || s[2] != ':' || !digit(s[0]) || !digit(s[1]) || !digit(s[3]) || !digit(s[4]) {
		return 0, fmt.Errorf("%q is not a time of day HH:MM", clip(s))
	}
	h := int(s[0]-'0')*10 + int(s[1]-'0')
	m := int(s[3]-'0')*10 + int(s[4]-'0')
	if h > 24 || m > 59 || h == 24 && m != 0 {
		return 0, fmt.Errorf("%s is not a time of day", s)
	}
	return time.Duration(h)*time.Hour + time.Duration(m)*time.Minute, nil
}

// planSchedule decodes a plan's schedule: a list of entries written as a
// plan is, rules' rates by name and a priority, with days and hours.
func (d *decoder) planSchedule(n *yaml.Node, path string) []policy.PlanScheduleEntry {
	var s []policy.PlanScheduleEntry
	for i, en := range d.list(n, path, `schedule entries, such as {days: [sat, sun], claims: 2000/m}`) {
		at := index(path, i)
		if !d.usable(en, at) || en.Kind != yaml.MappingNode {
			if !d.failed[at] {
				d.fail(en, at, "want a schedule entry (days, hours, rules' rates by name, priority), not %s", kindName(en))
			}
			continue
		}
		own, rates := ownFields(en, entryFields)
		var e policy.PlanScheduleEntry
		e.Days, e.From, e.To = d.when(own["days"], own["hours"], at)
		var counts map[string]int64
		e.Limits, counts = d.rates(rates, at)
		for rule := range counts {
			d.fail(d.nodes[join(at, rule)], join(at, rule), "a schedule replaces rates, never a count in flight (such as %s: 20/m for a rate rule; override a concurrency rule in the plan itself)", rule)
		}
		if own["priority"] != nil {
			e.Priority = new(d.priority(own["priority"], join(at, "priority")))
		}
		if len(e.Limits) == 0 && e.Priority == nil {
			d.replacesNothing(en, at, len(rates.Content) == 0 && own["priority"] == nil, "give it a rule's rate, such as claims: 500/m, or a priority")
		}
		s = append(s, e)
	}
	return s
}

// An own field is a plan's or a plan entry's field that is not a rule's
// rate, told apart by its value: a rule may be named priority, days or
// hours and keeps its override (priority: 10/s).
type ownField func(v *yaml.Node) bool

func wordValue(v *yaml.Node) bool {
	return v.Kind == yaml.ScalarNode && !strings.Contains(v.Value, "/")
}
func listValue(v *yaml.Node) bool { return v.Kind == yaml.SequenceNode }

var (
	planFields  = map[string]ownField{"priority": wordValue, "schedule": listValue}
	entryFields = map[string]ownField{"priority": wordValue, "days": listValue, "hours": wordValue}
)

// ownFields splits mapping n into its own fields (the first of each
// name) and a mapping of the rest, the rules' rates.
func ownFields(n *yaml.Node, fields map[string]ownField) (map[string]*yaml.Node, *yaml.Node) {
	own := map[string]*yaml.Node{}
	rest := *n
	rest.Content = nil
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if is, ok := fields[k.Value]; ok && k.Kind == yaml.ScalarNode && own[k.Value] == nil && is(v) {
			own[k.Value] = v
			continue
		}
		rest.Content = append(rest.Content, k, v)
	}
	return own, &rest
}

// timeZone decodes time_zone: an IANA zone name, or UTC (the default).
func (d *decoder) timeZone(n *yaml.Node, path string) *time.Location {
	const accepted = "an IANA name such as Europe/Berlin or America/New_York, or UTC"
	s, ok := d.scalar(n, path, "a time zone ("+accepted+")")
	if !ok {
		return nil
	}
	if s == "" || s == "Local" {
		d.fail(n, path, "%q is not a time zone every machine reads alike (%s)", s, accepted)
		return nil
	}
	loc, err := time.LoadLocation(s)
	if err != nil {
		d.fail(n, path, "unknown time zone %q (%s)", clip(s), accepted)
		return nil
	}
	return loc
}

// scheduleTable writes, when rules or plans have schedules, one row per
// entry: whose, its number (from 1), its days and hours, what it
// replaces; and the time zone they are read in. A time_zone without
// schedules is named alone.
func (f *File) scheduleTable(b *strings.Builder) {
	p := f.Policy
	type row struct{ whose, when, sets string }
	var rows []row
	for _, r := range p.Rules {
		for _, e := range r.Schedule {
			rows = append(rows, row{r.Name, e.When(), entryText(e)})
		}
	}
	for _, name := range slices.Sorted(maps.Keys(p.Plans)) {
		for _, e := range p.Plans[name].Schedule {
			rows = append(rows, row{"plan " + name, e.When(), planEntryText(e)})
		}
	}
	zone := f.Compiled.Location().String()
	if len(rows) == 0 {
		if p.Location != nil {
			fmt.Fprintf(b, "\ntime zone: %s (no rule or plan has a schedule)\n", zone)
		}
		return
	}
	fmt.Fprintf(b, "\nschedules, in %s (the first entry in force applies):\n", zone)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCHEDULE\tENTRY\tWHEN\tREPLACES")
	n, last := 0, ""
	for _, r := range rows {
		if r.whose != last {
			n, last = 0, r.whose
		}
		n++
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", r.whose, n, r.when, r.sets)
	}
	tw.Flush()
}

// entryText is what a rule's schedule entry replaces: "rate 2/m, burst
// 5, priority low, degrade true".
func entryText(e policy.ScheduleEntry) string {
	var parts []string
	if e.Rate != nil {
		parts = append(parts, "rate "+e.Rate.String())
	}
	if e.Burst > 0 {
		parts = append(parts, fmt.Sprintf("burst %d", e.Burst))
	}
	if e.Priority != nil {
		parts = append(parts, "priority "+e.Priority.String())
	}
	if e.Degrade != nil {
		parts = append(parts, fmt.Sprintf("degrade %v", *e.Degrade))
	}
	return strings.Join(parts, ", ")
}

// planEntryText is what a plan's schedule entry replaces: "claims
// 2000/m, priority high".
func planEntryText(e policy.PlanScheduleEntry) string {
	var parts []string
	for _, rule := range slices.Sorted(maps.Keys(e.Limits)) {
		parts = append(parts, rule+" "+e.Limits[rule].String())
	}
	if e.Priority != nil {
		parts = append(parts, "priority "+e.Priority.String())
	}
	return strings.Join(parts, ", ")
}
