package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/policy"
)

// stampLayout is how check writes an instant of a schedule: the weekday,
// the date, the time of day and the zone's abbreviation, in the file's
// time zone.
const stampLayout = "Mon 2006-01-02 15:04 MST"

// writeSchedules writes, when rules or plans have schedules, what is in
// force at now and until when: one line per rule and plan (scheduleLine).
func writeSchedules(w io.Writer, c *policy.Compiled, now time.Time) error {
	states := c.ScheduleAt(now)
	if len(states) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nin force at %s:\n", now.In(c.Location()).Format(stampLayout))
	for _, st := range states {
		b.WriteString("  " + scheduleLine(st, c.Location()) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// scheduleLine says what one schedule puts in force, and until when:
// "exports: rate 2/m (schedule entry 1, mon-fri 08:00-18:00 Europe/Berlin)
// until Mon 2026-12-07 18:00 CET; then rate 10/m". Entries are numbered
// from 1, as check's table of schedules numbers them.
func scheduleLine(st policy.ScheduleState, loc *time.Location) string {
	whose := st.Rule
	if st.Plan != "" {
		whose = "plan " + st.Plan
	}
	s := fmt.Sprintf("%s: %s (%s)", whose, st.Sets, entryName(st.Entry, st.When, loc.String()))
	if st.Next.IsZero() {
		return s + ", with no change ahead"
	}
	s += fmt.Sprintf(" until %s; then %s", st.Next.In(loc).Format(stampLayout), st.Then)
	if st.NextEntry >= 0 {
		s += " (" + entryName(st.NextEntry, st.NextWhen, "") + ")"
	}
	return s
}

// entryName names entry k of a schedule with its days and hours (and
// zone, if given), or says that none is in force.
func entryName(k int, when, zone string) string {
	if k < 0 {
		return "no schedule entry"
	}
	s := fmt.Sprintf("schedule entry %d, %s", k+1, when)
	if zone != "" {
		s += " " + zone
	}
	return s
}
