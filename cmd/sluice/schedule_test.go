package main

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/config"
)

// scheduleConfig is DESIGN's schedule example, with a night entry and a
// plan's weekend.
const scheduleConfig = `listen: 127.0.0.1:8080
upstream: http://127.0.0.1:9000
clients:
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
    schedule:
      - { days: [mon, tue, wed, thu, fri], hours: "08:00-18:00", rate: 2/m }
      - { days: [fri], hours: "22:00-06:00", rate: 1/m }
  - name: reports
    match: { path: /reports }
    priority: low
    schedule:
      - { degrade: true }
time_zone: Europe/Berlin
`

// check prints, for each schedule, the entry in force and the next
// change, in the file's time zone; here at fixed instants.
func TestCheckSchedules(t *testing.T) {
	cfg, err := config.Parse("s.yaml", []byte(scheduleConfig))
	if err != nil {
		t.Fatal(err)
	}
	loc := cfg.Compiled.Location()
	for _, tc := range []struct {
		name string
		now  time.Time
		want string
	}{
		{"working hours", time.Date(2026, 12, 7, 9, 30, 0, 0, loc), `
in force at Mon 2026-12-07 09:30 CET:
  exports: rate 2/m (schedule entry 1, mon-fri 08:00-18:00 Europe/Berlin) until Mon 2026-12-07 18:00 CET; then rate 10/m
  reports: degrade true (schedule entry 1, every day all day Europe/Berlin), with no change ahead
  plan large: exports 20/m, no priority (no schedule entry) until Sat 2026-12-12 00:00 CET; then exports 50/m, priority high (schedule entry 1, sat,sun all day)
`},
		{"evening", time.Date(2026, 12, 7, 18, 0, 0, 0, loc), `
in force at Mon 2026-12-07 18:00 CET:
  exports: rate 10/m (no schedule entry) until Tue 2026-12-08 08:00 CET; then rate 2/m (schedule entry 1, mon-fri 08:00-18:00)
`},
		{"friday night", time.Date(2026, 12, 11, 23, 0, 0, 0, loc), `
in force at Fri 2026-12-11 23:00 CET:
  exports: rate 1/m (schedule entry 2, fri 22:00-06:00 Europe/Berlin) until Sat 2026-12-12 06:00 CET; then rate 10/m
`},
		{"summer time", time.Date(2026, 7, 3, 17, 0, 0, 0, time.UTC), `
in force at Fri 2026-07-03 19:00 CEST:
  exports: rate 10/m (no schedule entry) until Fri 2026-07-03 22:00 CEST; then rate 1/m (schedule entry 2, fri 22:00-06:00)
`},
	} {
		var b strings.Builder
		if err := writeSchedules(&b, cfg.Compiled, tc.now); err != nil {
			t.Fatal(err)
		}
		got := b.String()
		// Each case lists the lines it is about; the full output has one per schedule.
		for _, line := range strings.Split(strings.TrimPrefix(tc.want, "\n"), "\n") {
			if line != "" && !strings.Contains(got, line+"\n") {
				t.Errorf("%s: output lacks\n%s\ngot:\n%s", tc.name, line, got)
			}
		}
		if n := strings.Count(got, "\n  "); n != 3 {
			t.Errorf("%s: %d schedules, want 3:\n%s", tc.name, n, got)
		}
	}
	var none strings.Builder
	plain, _ := config.Parse("g.yaml", []byte(goodConfig))
	if err := writeSchedules(&none, plain.Compiled, time.Now()); err != nil || none.Len() != 0 {
		t.Errorf("a file without schedules: %q, want nothing", none.String())
	}
}

// sluice check prints the table of schedules and what is in force now.
func TestCheckPrintsSchedules(t *testing.T) {
	path := writeFile(t, "s.yaml", scheduleConfig)
	code, out, errs := runCmd("check", "--config", path)
	if code != 0 {
		t.Fatalf("exit %d, want 0; stderr:\n%s", code, errs)
	}
	for _, want := range []string{
		"\nschedules, in Europe/Berlin (the first entry in force applies):\nSCHEDULE    ENTRY  WHEN                 REPLACES\n",
		"exports     1      mon-fri 08:00-18:00  rate 2/m\n",
		"exports     2      fri 22:00-06:00      rate 1/m\n",
		"reports     1      every day all day    degrade true\n",
		"plan large  1      sat,sun all day      exports 50/m, priority high\n",
		"\nin force at ",
		"\n  reports: degrade true (schedule entry 1, every day all day Europe/Berlin), with no change ahead\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
}
