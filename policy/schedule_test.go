package policy_test

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // Europe/Berlin on a machine without a zone database

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/throttle"
)

func berlin(t testing.TB) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

var weekdays = []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday}

// exports is DESIGN's example: exports at 10/m, 2/m on working days from
// 08:00 to 18:00 in Europe/Berlin.
func exports(t testing.TB, entries ...policy.ScheduleEntry) *policy.Compiled {
	t.Helper()
	if len(entries) == 0 {
		entries = []policy.ScheduleEntry{{Days: weekdays, From: 8 * time.Hour, To: 18 * time.Hour, Rate: new(rate(2, time.Minute))}}
	}
	return mustCompile(t, policy.Policy{Location: berlin(t), Rules: []policy.Rule{
		{Name: "exports", Match: policy.Match{Path: "/exports"}, Rate: rate(10, time.Minute), Schedule: entries},
	}})
}

// step is one instant of a schedule's table: the rate in force then, and
// the next change.
type step struct {
	at   time.Time
	n    int64 // the rate's N in force at at
	next time.Time
}

func runSteps(t *testing.T, c *policy.Compiled, steps []step) {
	t.Helper()
	for _, s := range steps {
		in, next := c.At(s.at)
		if got := in.RuleLimit(0).Rate(); got != s.n {
			t.Errorf("at %v: rate %d, want %d", s.at, got, s.n)
		}
		if !next.Equal(s.next) {
			t.Errorf("at %v: next change %v, want %v", s.at, next, s.next)
		}
	}
}

// An entry is in force from From on, up to but not at To; its next
// change is exact, days later over a weekend.
func TestScheduleBoundaries(t *testing.T) {
	loc := berlin(t)
	at := func(day, h, m int) time.Time { return time.Date(2026, 12, day, h, m, 0, 0, loc) } // 7 December 2026 is a Monday
	c := exports(t)
	runSteps(t, c, []step{
		{at(7, 7, 59), 10, at(7, 8, 0)},
		{at(7, 8, 0).Add(-time.Nanosecond), 10, at(7, 8, 0)},
		{at(7, 8, 0), 2, at(7, 18, 0)},
		{at(7, 17, 59), 2, at(7, 18, 0)},
		{at(7, 18, 0).Add(-time.Nanosecond), 2, at(7, 18, 0)},
		{at(7, 18, 0), 10, at(8, 8, 0)},
		{at(11, 18, 0), 10, at(14, 8, 0)}, // Friday evening: Monday morning
		{at(12, 12, 0), 10, at(14, 8, 0)},
	})
	// The instant is the same however t's location is written.
	in, next := c.At(at(7, 9, 0).UTC())
	if in.RuleLimit(0).Rate() != 2 || !next.Equal(at(7, 18, 0)) || next.Location().String() != "Europe/Berlin" {
		t.Errorf("UTC instant: rate %d, next %v", in.RuleLimit(0).Rate(), next)
	}
}

// A span belongs to the day it starts on: fri 22:00-06:00 covers Saturday
// 03:00, and sat 22:00-06:00 does not.
func TestScheduleMidnight(t *testing.T) {
	loc := berlin(t)
	at := func(day, h int) time.Time { return time.Date(2026, 12, day, h, 0, 0, 0, loc) } // 11 December 2026 is a Friday
	fri := exports(t, policy.ScheduleEntry{Days: []time.Weekday{time.Friday}, From: 22 * time.Hour, To: 6 * time.Hour, Rate: new(rate(2, time.Minute))})
	runSteps(t, fri, []step{
		{at(11, 3), 10, at(11, 22)}, // Friday 03:00: Thursday's span, not in the days
		{at(11, 22), 2, at(12, 6)},
		{at(12, 0), 2, at(12, 6)},
		{at(12, 3), 2, at(12, 6)},
		{at(12, 6), 10, at(18, 22)},
		{at(12, 23), 10, at(18, 22)},
	})
	sat := exports(t, policy.ScheduleEntry{Days: []time.Weekday{time.Saturday}, From: 22 * time.Hour, To: 6 * time.Hour, Rate: new(rate(2, time.Minute))})
	runSteps(t, sat, []step{
		{at(12, 3), 10, at(12, 22)},
		{at(13, 3), 2, at(13, 6)},
	})
	// An end of 00:00 is midnight after the start; 24:00 the same.
	for _, to := range []time.Duration{0, 24 * time.Hour} {
		c := exports(t, policy.ScheduleEntry{Days: []time.Weekday{time.Friday}, From: 20 * time.Hour, To: to, Rate: new(rate(2, time.Minute))})
		runSteps(t, c, []step{{at(11, 23), 2, at(12, 0)}, {at(12, 0), 10, at(18, 20)}})
	}
}

// Clocks going forward (Europe/Berlin, 29 March 2026, 02:00 CET becomes
// 03:00 CEST): 02:30 does not exist, so an entry from 02:30 starts at
// 03:00. Going back (25 October 2026, 03:00 CEST becomes 02:00 CET): 02:30
// exists twice, and the entry starts at the first.
func TestScheduleDST(t *testing.T) {
	utc := func(m time.Month, d, h, min int) time.Time { return time.Date(2026, m, d, h, min, 0, 0, time.UTC) }
	sunday := []time.Weekday{time.Sunday}
	c := exports(t, policy.ScheduleEntry{Days: sunday, From: 2*time.Hour + 30*time.Minute, To: 3*time.Hour + 30*time.Minute, Rate: new(rate(2, time.Minute))})
	runSteps(t, c, []step{
		// Forward: 01:00 UTC is 03:00 CEST, the next instant after 01:59:59 CET.
		{utc(3, 29, 0, 59), 10, utc(3, 29, 1, 0)},
		{utc(3, 29, 1, 0), 2, utc(3, 29, 1, 30)}, // to 03:30 CEST
		{utc(3, 29, 1, 30), 10, utc(4, 5, 0, 30)},
		// Back: the first 02:30 is 00:30 UTC (CEST); 03:30 is 02:30 UTC (CET).
		{utc(10, 25, 0, 29), 10, utc(10, 25, 0, 30)},
		{utc(10, 25, 0, 30), 2, utc(10, 25, 2, 30)},
		{utc(10, 25, 1, 45), 2, utc(10, 25, 2, 30)}, // 02:45 CET, the second time round
		{utc(10, 25, 2, 30), 10, utc(11, 1, 1, 30)},
	})
	// A span that falls wholly in the skipped hour is not in force that
	// day; the next change is the week after.
	gap := exports(t, policy.ScheduleEntry{Days: sunday, From: 2*time.Hour + 10*time.Minute, To: 2*time.Hour + 50*time.Minute, Rate: new(rate(2, time.Minute))})
	runSteps(t, gap, []step{
		{utc(3, 28, 12, 0), 10, utc(4, 5, 0, 10)},
		{utc(3, 29, 1, 0), 10, utc(4, 5, 0, 10)},
	})
	// Working hours across the change: Friday CET evening, Monday CEST morning.
	runSteps(t, exports(t), []step{{utc(3, 27, 17, 0), 10, utc(3, 30, 6, 0)}})
}

// The first entry in force wins; an entry hidden by an earlier one
// changes nothing when it starts or ends.
func TestScheduleFirstWins(t *testing.T) {
	loc := berlin(t)
	at := func(day, h int) time.Time { return time.Date(2026, 12, day, h, 0, 0, 0, loc) }
	c := exports(t,
		policy.ScheduleEntry{Days: []time.Weekday{time.Monday}, From: 8 * time.Hour, To: 12 * time.Hour, Rate: new(rate(1, time.Minute))},
		policy.ScheduleEntry{Rate: new(rate(5, time.Minute))}, // all day, every day
		policy.ScheduleEntry{Days: []time.Weekday{time.Monday}, From: 9 * time.Hour, To: 10 * time.Hour, Rate: new(rate(7, time.Minute))},
	)
	runSteps(t, c, []step{
		{at(7, 7), 5, at(7, 8)},
		{at(7, 9), 1, at(7, 12)},
		{at(7, 13), 5, at(14, 8)}, // the all-day entry's midnights change nothing
	})
	always := exports(t, policy.ScheduleEntry{Rate: new(rate(5, time.Minute))})
	runSteps(t, always, []step{{at(7, 13), 5, time.Time{}}})
}

// Without a schedule, At is the policy itself and never changes.
func TestScheduleNone(t *testing.T) {
	c := mustCompile(t, base())
	in, next := c.At(time.Date(2026, 12, 7, 9, 0, 0, 0, time.UTC))
	if in != c || !next.IsZero() {
		t.Errorf("At = %p, %v; want the policy itself and the zero Time", in, next)
	}
	if st := c.ScheduleAt(time.Now()); st != nil {
		t.Errorf("ScheduleAt = %+v, want none", st)
	}
	if c.Location() != time.UTC {
		t.Errorf("Location = %v, want UTC", c.Location())
	}
}

// weekend is base() with schedules: on Saturdays and Sundays the plan
// large gives api 2000/m and priority high, and the claims rule halves
// its rate and is degraded at low priority.
func weekend(t testing.TB) *policy.Compiled {
	t.Helper()
	p := base()
	wk := []time.Weekday{time.Saturday, time.Sunday}
	p.Plans["large"] = policy.Plan{Limits: p.Plans["large"].Limits, Schedule: []policy.PlanScheduleEntry{
		{Days: wk, Limits: map[string]policy.Rate{"api": rate(2000, time.Minute)}, Priority: new(throttle.High)},
	}}
	p.Plans["small"] = policy.Plan{Schedule: []policy.PlanScheduleEntry{
		{Days: wk, Limits: map[string]policy.Rate{"api": rate(50, time.Minute)}},
	}}
	p.Clients.List = append(p.Clients.List, policy.Client{ID: "dot", Keys: []string{"k-dot"}, Plan: "small"})
	p.Rules[1].Schedule = policy.Schedule{{Days: wk, Rate: new(rate(5, time.Second)), Priority: new(throttle.Low), Degrade: new(true)}}
	return mustCompile(t, p)
}

var (
	saturday = time.Date(2026, 12, 12, 12, 0, 0, 0, time.UTC)
	monday   = time.Date(2026, 12, 14, 12, 0, 0, 0, time.UTC)
)

// A plan's entry replaces the plan's override and priority; a client's
// own override still beats it; a rule's entry replaces its rate (the burst
// in proportion), priority and degrade.
func TestScheduleReplaces(t *testing.T) {
	c := weekend(t)
	limit := func(pol *policy.Compiled, id string, rule int) limiter.Limit {
		caller, _ := pol.CallerByID(id)
		return caller.Limit(rule)
	}
	sat, next := c.At(saturday)
	if want := time.Date(2026, 12, 14, 0, 0, 0, 0, time.UTC); !next.Equal(want) {
		t.Errorf("next change %v, want %v", next, want)
	}
	mon, _ := c.At(monday)
	if mon != c {
		t.Error("Monday: a copy, want the policy as written")
	}
	for _, tc := range []struct {
		pol      *policy.Compiled
		id       string
		rule     int
		n, burst int64
	}{
		{sat, "acme", 0, 2000, 2000},
		{mon, "acme", 0, 1000, 1000},
		{sat, "acme", 1, 40, 80}, // the plan's own override of claims, its burst from the rule's entry: 10 for 5/s
		{sat, "bolt", 1, 5, 10},  // its own: 5/s, burst 20×5/10
		{sat, "dot", 0, 50, 50},
		{mon, "dot", 0, 100, 100}, // no override outside the entry: the rule's
		{sat, "corp", 1, 5, 10},
		{mon, "corp", 1, 10, 20},
	} {
		l := limit(tc.pol, tc.id, tc.rule)
		if l.Rate() != tc.n || l.Burst() != tc.burst {
			t.Errorf("%s rule %d on %v: %d burst %d, want %d burst %d", tc.id, tc.rule, tc.pol == sat, l.Rate(), l.Burst(), tc.n, tc.burst)
		}
	}
	acme, _ := sat.CallerByID("acme")
	if got := acme.Priority(throttle.Normal); got != throttle.High {
		t.Errorf("acme's priority on Saturday %v, want high", got)
	}
	acme, _ = mon.CallerByID("acme")
	if got := acme.Priority(throttle.Normal); got != throttle.Normal {
		t.Errorf("acme's priority on Monday %v, want normal", got)
	}
	if r := sat.Rule(1); r.Priority == nil || *r.Priority != throttle.Low || !r.Degrade {
		t.Errorf("claims on Saturday: priority %v degrade %v, want low and degrade", r.Priority, r.Degrade)
	}
	if r := mon.Rule(1); r.Priority != nil || r.Degrade {
		t.Errorf("claims on Monday: priority %v degrade %v, want none", r.Priority, r.Degrade)
	}
	if again, _ := sat.At(monday); again != c {
		t.Error("At on a copy: not the policy as written")
	}
	if got := sat.Policy().Rules[1].Rate; got != rate(5, time.Second) {
		t.Errorf("the copy's policy has claims at %v, want 5/s", got)
	}
}

// A schedule changes no state key: every caller's StateTag and
// LimitSource of every rule are the same in and out of every entry, also
// for a plan whose only override of a rule is scheduled.
func TestScheduleKeepsStateKeys(t *testing.T) {
	c := weekend(t)
	sat, _ := c.At(saturday)
	if sat == c {
		t.Fatal("Saturday: no entry in force")
	}
	for _, id := range []string{"acme", "bolt", "corp", "dot"} {
		in, _ := sat.CallerByID(id)
		out, _ := c.CallerByID(id)
		for i := range c.Rules() {
			if in.StateTag(i) != out.StateTag(i) || in.LimitSource(i) != out.LimitSource(i) {
				t.Errorf("%s rule %d: %s %q in the entry, %s %q out of it", id, i, in.StateTag(i), in.LimitSource(i), out.StateTag(i), out.LimitSource(i))
			}
		}
	}
	dot, _ := c.CallerByID("dot")
	if got := dot.LimitSource(0); got != "plan:small" {
		t.Errorf("dot's source of api on Monday %q, want plan:small (its plan schedules api)", got)
	}
}

// ScheduleAt says which entry is in force, what it sets, and what comes
// next.
func TestScheduleAt(t *testing.T) {
	c := weekend(t)
	got := c.ScheduleAt(monday)
	want := []policy.ScheduleState{
		{Rule: "claims", Entry: -1, Sets: "rate 10/s burst 20, no priority, degrade false",
			Next: time.Date(2026, 12, 19, 0, 0, 0, 0, time.UTC), NextEntry: 0, NextWhen: "sat,sun all day", Then: "rate 5/s burst 10, priority low, degrade true"},
		{Plan: "large", Entry: -1, Sets: "api 1000/m, no priority",
			Next: time.Date(2026, 12, 19, 0, 0, 0, 0, time.UTC), NextEntry: 0, NextWhen: "sat,sun all day", Then: "api 2000/m, priority high"},
		{Plan: "small", Entry: -1, Sets: "api at the rule's rate",
			Next: time.Date(2026, 12, 19, 0, 0, 0, 0, time.UTC), NextEntry: 0, NextWhen: "sat,sun all day", Then: "api 50/m"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("ScheduleAt(Monday):\n got %+v\nwant %+v", got, want)
	}
	sat := c.ScheduleAt(saturday)
	if len(sat) != 3 || sat[0].Entry != 0 || sat[0].When != "sat,sun all day" || sat[0].NextEntry != -1 ||
		!sat[0].Next.Equal(time.Date(2026, 12, 14, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("ScheduleAt(Saturday)[0] = %+v", sat[0])
	}
	st := exports(t).ScheduleAt(time.Date(2026, 12, 7, 9, 0, 0, 0, berlin(t)))
	if len(st) != 1 || st[0].When != "mon-fri 08:00-18:00" || st[0].Sets != "rate 2/m" || st[0].Then != "rate 10/m" {
		t.Errorf("exports: %+v", st)
	}
}

// Each problem of a schedule is reported at its field.
func TestScheduleErrors(t *testing.T) {
	rule := func(r policy.Rule) policy.Policy { return policy.Policy{Rules: []policy.Rule{r}} }
	win := policy.Rule{Name: "w", Rate: rate(10, time.Minute)}
	bucket := policy.Rule{Name: "b", Algorithm: limiter.TokenBucket, Rate: rate(10, time.Second), Burst: 20}
	with := func(r policy.Rule, e ...policy.ScheduleEntry) policy.Rule { r.Schedule = e; return r }
	two := new(rate(2, time.Minute))
	for _, tc := range []struct {
		name string
		p    policy.Policy
		want string
	}{
		{"nothing", rule(with(win, policy.ScheduleEntry{From: time.Hour, To: 2 * time.Hour})),
			"rules[0].schedule[0]: the entry replaces nothing (give it a rate, burst, priority or degrade)"},
		{"same hours", rule(with(win, policy.ScheduleEntry{From: time.Hour, To: time.Hour, Rate: two})),
			"rules[0].schedule[0].hours: starts and ends at 01:00: the entry would never be in force (such as 08:00-18:00; 22:00-06:00 ends the next day; leave hours out for the whole day)"},
		{"start 24:00", rule(with(win, policy.ScheduleEntry{From: 24 * time.Hour, To: time.Hour, Rate: two})),
			"rules[0].schedule[0].hours: start 24h0m0s out of range (a time of day from 00:00 to 23:59)"},
		{"end past 24:00", rule(with(win, policy.ScheduleEntry{From: time.Hour, To: 25 * time.Hour, Rate: two})),
			"rules[0].schedule[0].hours: end 25h0m0s out of range (a time of day from 00:00 to 24:00)"},
		{"day twice", rule(with(win, policy.ScheduleEntry{Days: []time.Weekday{time.Monday, time.Monday}, Rate: two})),
			"rules[0].schedule[0].days[1]: mon listed twice"},
		{"unknown day", rule(with(win, policy.ScheduleEntry{Days: []time.Weekday{7}, Rate: two})),
			"rules[0].schedule[0].days[0]: unknown day 7 (mon, tue, wed, thu, fri, sat or sun)"},
		{"burst on a window", rule(with(win, policy.ScheduleEntry{Burst: 5})),
			"rules[0].schedule[0].burst: a burst applies only to token_bucket, gcra and leaky_bucket (rule w is sliding_window)"},
		{"bad rate", rule(with(policy.Rule{Name: "l", Algorithm: limiter.SlidingLog, Rate: rate(10, time.Second)}, policy.ScheduleEntry{Rate: new(rate(20000, time.Second))})),
			"rules[0].schedule[0].rate: sliding_log rate 20000 too large (at most 10000 per period; it stores one entry per request: use sliding_window or gcra)"},
		{"bad burst", rule(with(bucket, policy.ScheduleEntry{Burst: 2_000_000_000})),
			"rules[0].schedule[0].burst: burst 2000000000 out of range (1 to 1000000000)"},
		{"cost above the entry", rule(with(policy.Rule{Name: "c", Rate: rate(10, time.Minute), Cost: 5}, policy.ScheduleEntry{Rate: new(rate(2, time.Minute))})),
			"rules[0].schedule[0].rate: with this entry in force the rule allows 2 at once (rate 2/m), less than its cost 5: every request would be refused (a larger rate or burst)"},
		{"concurrency rate", rule(with(policy.Rule{Name: "f", Concurrency: 5}, policy.ScheduleEntry{Rate: two})),
			"rules[0].schedule[0].rate: rule f limits requests in flight: a schedule cannot give it a rate or a burst (an entry may replace its priority or degrade)"},
		{"classifier rate", rule(with(policy.Rule{Name: "k", Degrade: true}, policy.ScheduleEntry{Rate: two})),
			"rules[0].schedule[0].rate: rule k has no rate to replace: it only classifies requests (give the rule a rate; an entry may replace its priority or degrade)"},
		{"bad priority", rule(with(win, policy.ScheduleEntry{Priority: new(throttle.Priority(9))})),
			"rules[0].schedule[0].priority: unknown priority 9 (critical, high, normal or low)"},
		{"plan override under the entry", policy.Policy{
			Rules: []policy.Rule{with(policy.Rule{Name: "c", Rate: rate(10, time.Minute), Cost: 3}, policy.ScheduleEntry{Rate: new(rate(100, time.Minute))})},
			Plans: map[string]policy.Plan{"p": {Limits: map[string]policy.Rate{"c": rate(20, time.Minute)}, Schedule: []policy.PlanScheduleEntry{
				{Limits: map[string]policy.Rate{"c": rate(2, time.Minute)}, Days: []time.Weekday{time.Sunday}}}}}},
			"plans.p.schedule[0].c: rate 2/m allows at most 2 at once, less than rule c's cost 3: every request would be refused (a limit of at least 3 at once)"},
		{"plan entry for nothing", policy.Policy{Rules: []policy.Rule{win}, Plans: map[string]policy.Plan{"p": {Schedule: []policy.PlanScheduleEntry{{}}}}},
			"plans.p.schedule[0]: the entry replaces nothing (give it a rule's rate, such as claims: 500/m, or a priority)"},
		{"plan entry unknown rule", policy.Policy{Rules: []policy.Rule{win}, Plans: map[string]policy.Plan{"p": {Schedule: []policy.PlanScheduleEntry{{Limits: map[string]policy.Rate{"x": rate(1, time.Second)}}}}}},
			`plans.p.schedule[0].x: unknown rule "x" (rules: w)`},
		{"plan entry concurrency", policy.Policy{Rules: []policy.Rule{{Name: "f", Concurrency: 5}}, Plans: map[string]policy.Plan{"p": {Schedule: []policy.PlanScheduleEntry{{Limits: map[string]policy.Rate{"f": rate(1, time.Second)}}}}}},
			"plans.p.schedule[0].f: rule f limits requests in flight: a schedule replaces rates, never a count in flight (override it in the plan itself)"},
		{"plan entry under a rule entry", policy.Policy{
			Rules: []policy.Rule{with(policy.Rule{Name: "b", Algorithm: limiter.GCRA, Rate: rate(10, time.Second), Burst: 10}, policy.ScheduleEntry{Burst: 1_000_000_000})},
			Plans: map[string]policy.Plan{"p": {Schedule: []policy.PlanScheduleEntry{{Limits: map[string]policy.Rate{"b": rate(20, time.Second)}}}}}},
			"plans.p.schedule[0].b: burst 2000000000 out of range (1 to 1000000000) (with rules[0].schedule[0] in force)"},
		{"client under a rule entry", policy.Policy{
			Rules:   []policy.Rule{with(policy.Rule{Name: "c", Rate: rate(10, time.Minute), Cost: 3}, policy.ScheduleEntry{Rate: new(rate(100, time.Minute))})},
			Clients: policy.Clients{List: []policy.Client{{ID: "a", Keys: []string{"k"}, Limits: map[string]policy.Rate{"c": rate(5, time.Minute)}}}}},
			""}, // the client's own 5/m is the same in and out: no entry makes it worse
	} {
		_, err := policy.Compile(tc.p)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v, want none", tc.name, err)
			}
			continue
		}
		var fe *policy.FieldError
		if err == nil || !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant %s", tc.name, err, tc.want)
		}
	}
}
