package config

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/throttle"
)

// designSchedule is DESIGN.md's schedule example (without its signals,
// which are not schedules), and a plan with a schedule of its own.
const designSchedule = head + `clients:
  list: [{id: partner-a, keys: [key-a], plan: large}]
plans:
  large:
    exports: 20/m
    schedule:
      - { days: [sat, sun], exports: 50/m, priority: high }
rules:
  - name: exports
    match: { path: /exports }
    key: client
    rate: 10/m
    schedule:                     # the first entry that matches the time replaces rate/burst/priority/degrade
      - { days: [mon, tue, wed, thu, fri], hours: "08:00-18:00", rate: 2/m }
time_zone: Europe/Berlin          # for every schedule (default UTC)
`

func TestScheduleAsDesignWritesIt(t *testing.T) {
	f, err := Parse("t.yaml", []byte(designSchedule))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Policy.Location.String(); got != "Europe/Berlin" {
		t.Errorf("time_zone %s, want Europe/Berlin", got)
	}
	want := policy.ScheduleEntry{Days: []time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday},
		From: 8 * time.Hour, To: 18 * time.Hour, Rate: &policy.Rate{N: 2, Period: time.Minute}}
	s := f.Policy.Rules[0].Schedule
	if len(s) != 1 || s[0].From != want.From || s[0].To != want.To || *s[0].Rate != *want.Rate || len(s[0].Days) != 5 || s[0].Days[4] != time.Friday {
		t.Errorf("schedule %+v, want %+v", s, want)
	}
	ps := f.Policy.Plans["large"].Schedule
	if len(ps) != 1 || ps[0].Limits["exports"] != (policy.Rate{N: 50, Period: time.Minute}) || *ps[0].Priority != throttle.High ||
		ps[0].From != 0 || ps[0].To != 0 || len(ps[0].Days) != 2 || f.Policy.Plans["large"].Limits["exports"].N != 20 {
		t.Errorf("plan large %+v", f.Policy.Plans["large"])
	}
	berlin := f.Compiled.Location()
	monday := time.Date(2026, 12, 7, 9, 0, 0, 0, berlin)
	in, next := f.Compiled.At(monday)
	if in.RuleLimit(0).Rate() != 2 || !next.Equal(time.Date(2026, 12, 7, 18, 0, 0, 0, berlin)) {
		t.Errorf("Monday 09:00: rate %d until %v, want 2 until 18:00", in.RuleLimit(0).Rate(), next)
	}
	saturday := time.Date(2026, 12, 12, 9, 0, 0, 0, berlin)
	in, _ = f.Compiled.At(saturday)
	if a, _ := in.CallerByID("partner-a"); a.Limit(0).Rate() != 50 || a.Priority(throttle.Normal) != throttle.High {
		t.Errorf("Saturday: partner-a at %d, priority %v; want 50/m, high", a.Limit(0).Rate(), a.Priority(throttle.Normal))
	}
	// The policy part alone reads the same schedule and zone.
	pf, err := ParsePolicy("t.yaml", []byte(designSchedule))
	if err != nil || pf.Compiled.Location().String() != "Europe/Berlin" || len(pf.Policy.Rules[0].Schedule) != 1 {
		t.Errorf("ParsePolicy: %v", err)
	}
}

// Rules and plans may be named days, hours, priority or schedule and keep
// their overrides: a rate is none of those fields.
func TestScheduleFieldNamesAsRules(t *testing.T) {
	text := head + `clients: {list: [{id: a, keys: [k], plan: p}]}
plans:
  p:
    schedule: 5/s
    priority: 6/s
    days: 7/s
    hours: 8/s
rules:
  - {name: schedule, rate: 1/s}
  - {name: priority, rate: 1/s}
  - {name: days, rate: 1/s}
  - {name: hours, rate: 1/s, schedule: [{hours: "01:00-02:00", rate: 2/s}]}
`
	f, err := Parse("t.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := f.Compiled.CallerByID("a")
	for i, want := range []int64{5, 6, 7, 8} {
		if got := a.Limit(i).Rate(); got != want {
			t.Errorf("rule %s: %d, want the plan's %d/s", f.Compiled.Rule(i).Name, got, want)
		}
	}
	if len(f.Policy.Plans["p"].Schedule) != 0 || f.Policy.Plans["p"].Priority != nil {
		t.Errorf("plan p: %+v, want overrides only", f.Policy.Plans["p"])
	}
	// In a plan's entry too.
	text = head + `clients: {list: [{id: a, keys: [k], plan: p}]}
plans: {p: {schedule: [{days: [mon], hours: "01:00-02:00", priority: high, days: 3/s, hours: 4/s}]}}
rules: [{name: days, rate: 1/s}, {name: hours, rate: 1/s}]
`
	f, err = Parse("t.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	e := f.Policy.Plans["p"].Schedule[0]
	if e.Limits["days"].N != 3 || e.Limits["hours"].N != 4 || e.From != time.Hour || len(e.Days) != 1 || *e.Priority != throttle.High {
		t.Errorf("entry %+v", e)
	}
}

func TestScheduleErrors(t *testing.T) {
	clients := "clients: {list: [{id: a, keys: [k], plan: p}]}\n"
	rule := func(extra, entry string) string {
		return head + "rules:\n  - {name: r, rate: 10/m" + extra + ", schedule: [" + entry + "]}\n"
	}
	for _, tc := range []struct{ name, text, want string }{
		{"unknown day", rule("", "{days: [mon, sut], rate: 2/m}"),
			`t.yaml:4:51: rules[0].schedule[0].days[1]: unknown day "sut" (did you mean "sat"? accepted: mon, tue, wed, thu, fri, sat, sun)`},
		{"day in full", rule("", "{days: [Monday], rate: 2/m}"),
			`t.yaml:4:46: rules[0].schedule[0].days[0]: unknown day "Monday" (did you mean "mon"? accepted: mon, tue, wed, thu, fri, sat, sun)`},
		{"day twice", rule("", "{days: [mon, Mon], rate: 2/m}"),
			`t.yaml:4:51: rules[0].schedule[0].days[1]: mon listed twice`},
		{"no days", rule("", "{days: [], rate: 2/m}"),
			`t.yaml:4:45: rules[0].schedule[0].days: an empty list (list days such as [mon, tue], or leave days out for every day)`},
		{"days not a list", rule("", "{days: mon, rate: 2/m}"),
			`t.yaml:4:45: rules[0].schedule[0].days: want a list of days (mon, tue, wed, thu, fri, sat, sun), not a value`},
		{"hours without a dash", rule("", `{hours: "08:00", rate: 2/m}`),
			`t.yaml:4:46: rules[0].schedule[0].hours: "08:00" is not hours (HH:MM-HH:MM from 00:00 to 24:00, such as 08:00-18:00, or 22:00-06:00 to end the next day)`},
		{"hours one digit", rule("", `{hours: "8:00-18:00", rate: 2/m}`),
			`t.yaml:4:46: rules[0].schedule[0].hours: "8:00-18:00": "8:00" is not a time of day HH:MM (HH:MM-HH:MM from 00:00 to 24:00, such as 08:00-18:00, or 22:00-06:00 to end the next day)`},
		{"hours past 24:00", rule("", `{hours: "08:00-24:30", rate: 2/m}`),
			`t.yaml:4:46: rules[0].schedule[0].hours: "08:00-24:30": 24:30 is not a time of day (HH:MM-HH:MM`},
		{"minutes past 59", rule("", `{hours: "08:60-10:00", rate: 2/m}`),
			`rules[0].schedule[0].hours: "08:60-10:00": 08:60 is not a time of day`},
		{"start at 24:00", rule("", `{hours: "24:00-06:00", rate: 2/m}`),
			`t.yaml:4:46: rules[0].schedule[0].hours: "24:00-06:00": 24:00 only ends an entry (a start from 00:00 to 23:59)`},
		{"from equals to", rule("", `{hours: "08:00-08:00", rate: 2/m}`),
			`t.yaml:4:46: rules[0].schedule[0].hours: "08:00-08:00" starts and ends at the same time: the entry would never be in force (such as 08:00-18:00; 00:00-24:00 or no hours for the whole day)`},
		{"midnight to midnight", rule("", `{hours: "00:00-00:00", rate: 2/m}`),
			`rules[0].schedule[0].hours: "00:00-00:00" starts and ends at the same time`},
		{"replaces nothing", rule("", `{days: [mon], hours: "08:00-18:00"}`),
			`t.yaml:4:38: rules[0].schedule[0]: the entry replaces nothing (give it a rate, burst, priority or degrade)`},
		{"unknown field", rule("", `{day: [mon], rate: 2/m}`),
			`t.yaml:4:39: rules[0].schedule[0]: unknown field "day" (did you mean "days"? accepted: days, hours, rate, burst, priority, degrade)`},
		{"rate does not parse", rule("", "{rate: 2/fortnight}"),
			`t.yaml:4:45: rules[0].schedule[0].rate: "2/fortnight": unknown period "fortnight"`},
		{"rate the algorithm refuses", rule(", algorithm: sliding_log", "{rate: 20000/m}"),
			`t.yaml:4:69: rules[0].schedule[0].rate: sliding_log rate 20000 too large (at most 10000 per period; it stores one entry per request: use sliding_window or gcra)`},
		{"burst on a window", rule("", "{burst: 5}"),
			`t.yaml:4:46: rules[0].schedule[0].burst: a burst applies only to token_bucket, gcra and leaky_bucket (rule r is sliding_window)`},
		{"burst out of range", rule(", algorithm: gcra", "{burst: 0}"),
			`rules[0].schedule[0].burst: 0 is out of range (1 or more; token_bucket, gcra and leaky_bucket only)`},
		{"cost above the entry", rule(", cost: 5", "{rate: 2/m}"),
			`t.yaml:4:54: rules[0].schedule[0].rate: with this entry in force the rule allows 2 at once (rate 2/m), less than its cost 5: every request would be refused (a larger rate or burst)`},
		{"rate on a concurrency rule", head + "rules: [{name: c, concurrency: 5, schedule: [{rate: 2/m}]}]\n",
			`t.yaml:3:53: rules[0].schedule[0].rate: rule c limits requests in flight: a schedule cannot give it a rate or a burst (an entry may replace its priority or degrade)`},
		{"rate on a classifying rule", head + "rules: [{name: c, degrade: true, schedule: [{rate: 2/m}]}]\n",
			`t.yaml:3:52: rules[0].schedule[0].rate: rule c has no rate to replace: it only classifies requests`},
		{"schedule not a list", rule("", "")[:len(rule("", ""))-4] + "{rate: 2/m}}\n",
			`rules[0].schedule: want a list of schedule entries`},
		{"plan entry unknown rule", head + clients + "plans: {p: {schedule: [{days: [sat], claim: 5/m}]}}\nrules: [{name: claims, rate: 1/m}]\n",
			`t.yaml:4:38: plans.p.schedule[0].claim: unknown rule "claim" (rules: claims)`},
		{"plan entry count", head + clients + "plans: {p: {schedule: [{c: 5}]}}\nrules: [{name: c, concurrency: 2}]\n",
			`t.yaml:4:28: plans.p.schedule[0].c: a schedule replaces rates, never a count in flight (such as c: 20/m for a rate rule; override a concurrency rule in the plan itself)`},
		{"plan entry rate of a concurrency rule", head + clients + "plans: {p: {schedule: [{c: 5/m}]}}\nrules: [{name: c, concurrency: 2}]\n",
			`t.yaml:4:28: plans.p.schedule[0].c: rule c limits requests in flight: a schedule replaces rates, never a count in flight`},
		{"plan entry replaces nothing", head + clients + "plans: {p: {schedule: [{days: [sat]}]}}\nrules: [{name: c, rate: 2/m}]\n",
			`t.yaml:4:24: plans.p.schedule[0]: the entry replaces nothing (give it a rule's rate, such as claims: 500/m, or a priority)`},
		{"plan entry bad rate", head + clients + "plans: {p: {schedule: [{c: 5/x}]}}\nrules: [{name: c, rate: 2/m}]\n",
			`t.yaml:4:28: plans.p.schedule[0].c: "5/x": unknown period "x"`},
		{"plan entry under the rule's entry", head + clients + "plans: {p: {schedule: [{c: 20000/m}]}}\nrules: [{name: c, algorithm: sliding_log, rate: 2/m, schedule: [{rate: 3/m}]}]\n",
			`t.yaml:4:28: plans.p.schedule[0].c: sliding_log rate 20000 too large`},
		{"plan entry cost", head + clients + "plans: {p: {schedule: [{c: 1/m}]}}\nrules: [{name: c, cost: 2, rate: 2/m}]\n",
			`t.yaml:4:28: plans.p.schedule[0].c: rate 1/m allows at most 1 at once, less than rule c's cost 2: every request would be refused (a limit of at least 2 at once)`},
		{"plan entry bad priority", head + clients + "plans: {p: {schedule: [{priority: top}]}}\nrules: [{name: c, rate: 2/m}]\n",
			`t.yaml:4:35: plans.p.schedule[0].priority: unknown value "top" (accepted: critical, high, normal, low)`},
		{"unknown time zone", head + "rules: [{name: a, rate: 1/s}]\ntime_zone: Europe/Berln\n",
			`t.yaml:4:12: time_zone: unknown time zone "Europe/Berln" (an IANA name such as Europe/Berlin or America/New_York, or UTC)`},
		{"Local time zone", head + "rules: [{name: a, rate: 1/s}]\ntime_zone: Local\n",
			`t.yaml:4:12: time_zone: "Local" is not a time zone every machine reads alike (an IANA name such as Europe/Berlin or America/New_York, or UTC)`},
		{"time zone a path", head + "rules: [{name: a, rate: 1/s}]\ntime_zone: ../../etc/passwd\n",
			`t.yaml:4:12: time_zone: unknown time zone "../../etc/passwd"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(tc.text))
			if err == nil {
				t.Fatal("accepted")
			}
			if got := err.Error(); !strings.Contains(got, tc.want) {
				t.Errorf("got:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}

// Accepted time zones: IANA names and UTC.
func TestTimeZones(t *testing.T) {
	for _, name := range []string{"UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"} {
		f, err := Parse("t.yaml", []byte(head+"rules: [{name: a, rate: 1/s}]\ntime_zone: "+name+"\n"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if got := f.Compiled.Location().String(); got != name {
			t.Errorf("%s: location %s", name, got)
		}
	}
}

// FuzzHours: parseHours and parseDay never panic; what they accept is a
// valid span (a start before 24:00, an end up to 24:00, apart), written
// back the same way, and a day is one of seven.
func FuzzHours(f *testing.F) {
	for _, s := range []string{"08:00-18:00", "22:00-06:00", "00:00-24:00", "24:00-01:00", "8:00-9:00", "08:00-08:00", "-", "", "99:99-00:00", "23:59-00:00", "mon", "Sun", "monday"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if day, err := parseDay(s); err == nil && (day < time.Sunday || day > time.Saturday || !strings.EqualFold(policy.DayName(day), s)) {
			t.Fatalf("parseDay(%q) = %v", s, day)
		}
		from, to, err := parseHours(s)
		if err != nil {
			if !strings.Contains(err.Error(), "HH:MM") && !strings.Contains(err.Error(), "24:00") && !strings.Contains(err.Error(), "same time") {
				t.Fatalf("parseHours(%q): %v says nothing of what is accepted", s, err)
			}
			return
		}
		if from < 0 || from >= 24*time.Hour || to < 0 || to > 24*time.Hour || from == to {
			t.Fatalf("parseHours(%q) = %v, %v", s, from, to)
		}
		back := policy.ScheduleEntry{From: from, To: to}.When()
		if want := "every day " + s; back != want {
			t.Fatalf("parseHours(%q) written back as %q", s, back)
		}
		if _, err := policy.Compile(policy.Policy{Rules: []policy.Rule{{Name: "r", Rate: policy.Rate{N: 1, Period: time.Second},
			Schedule: policy.Schedule{{From: from, To: to, Rate: &policy.Rate{N: 2, Period: time.Second}}}}}}); err != nil {
			t.Fatalf("parseHours(%q) = %v, %v, which Compile refuses: %v", s, from, to, err)
		}
	})
}
