package config

import (
	"strings"
	"testing"
	"time"
)

// designSignals is DESIGN.md's protect.signals example, with the rules it
// steers: the signal alone makes a protect block, and throttles nothing.
const designSignals = head + `protect:
  signals:                        # seed 002: less low-value work while the grid's carbon intensity is high
    - name: grid-carbon
      url: http://127.0.0.1:9100/carbon   # answers a JSON number, or {"value": N}; polled every ` + "`every`" + `
      every: 30s
      above: 400                  # while above: degrade rules refused (503) and ` + "`low`" + ` shed, as above shed_from
rules:
  - name: exports
    match: { path: /exports }
    priority: low
    degrade: true
`

func TestSignalsAsDesignWritesThem(t *testing.T) {
	f, err := Parse("t.yaml", []byte(designSignals))
	if err != nil {
		t.Fatal(err)
	}
	if f.Protect != nil {
		t.Errorf("Protect %+v, want nil: signals alone throttle nothing", f.Protect)
	}
	if len(f.Signals) != 1 {
		t.Fatalf("signals %+v, want one", f.Signals)
	}
	s := f.Signals[0]
	if s.Name != "grid-carbon" || s.URL.String() != "http://127.0.0.1:9100/carbon" || s.Every != 30*time.Second ||
		s.Timeout != 5*time.Second || s.Above != 400 {
		t.Errorf("signal %+v", s)
	}
	var b strings.Builder
	if err := f.WriteSummary(&b); err != nil {
		t.Fatal(err)
	}
	if want := "signals (degrade while above): grid-carbon above 400 (http://127.0.0.1:9100/carbon every 30s)\n"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}

// every defaults to 30s and timeout to the lesser of every and 5s; a
// signal beside the throttle's fields leaves them as they are; a query
// is sent as written; above may be negative or a fraction.
func TestSignalDefaults(t *testing.T) {
	f, err := Parse("t.yaml", []byte(head+`protect:
  max_in_flight: 10
  signals:
    - {name: a, url: "https://grid.example/intensity?zone=DE", above: -0.5}
    - {name: b.2, url: http://127.0.0.1:1/x, every: 2s, above: 1e3}
    - {name: c_3, url: "http://[::1]:9/", every: 1m, timeout: 1m, above: 0}
rules: [{name: r, rate: 1/s}]
`))
	if err != nil {
		t.Fatal(err)
	}
	if f.Protect == nil || f.Protect.MaxInFlight != 10 {
		t.Errorf("Protect %+v, want max_in_flight 10", f.Protect)
	}
	want := []struct {
		name, url      string
		every, timeout time.Duration
		above          float64
	}{
		{"a", "https://grid.example/intensity?zone=DE", 30 * time.Second, 5 * time.Second, -0.5},
		{"b.2", "http://127.0.0.1:1/x", 2 * time.Second, 2 * time.Second, 1000},
		{"c_3", "http://[::1]:9/", time.Minute, time.Minute, 0},
	}
	if len(f.Signals) != len(want) {
		t.Fatalf("signals %+v, want %d", f.Signals, len(want))
	}
	for i, w := range want {
		s := f.Signals[i]
		if s.Name != w.name || s.URL.String() != w.url || s.Every != w.every || s.Timeout != w.timeout || s.Above != w.above {
			t.Errorf("signal %d: %+v, want %+v", i, s, w)
		}
	}
	if !f.Signals[0].Equal(f.Signals[0]) || f.Signals[0].Equal(f.Signals[1]) {
		t.Error("Equal")
	}
}

func TestSignalsBadInput(t *testing.T) {
	rule := "rules: [{name: r, rate: 1/s}]\n"
	sig := func(fields string) string { return head + "protect:\n  signals:\n    - {" + fields + "}\n" + rule }
	for _, tc := range []struct{ name, text, want string }{
		{"not a list", head + "protect: {signals: {name: a}}\n" + rule,
			"t.yaml:3:20: protect.signals: want a list of signals (mappings of name, url, every, above, timeout), not a mapping"},
		{"not a mapping", head + "protect: {signals: [grid]}\n" + rule,
			"t.yaml:3:21: protect.signals[0]: want a signal (a mapping of name, url, every, above, timeout), not a value"},
		{"unknown field", sig("name: a, url: http://h/, above: 1, interval: 5s"),
			`t.yaml:5:43: protect.signals[0]: unknown field "interval" (accepted: name, url, every, above, timeout)`},
		{"name missing", sig("url: http://h/, above: 1"),
			"t.yaml:5:7: protect.signals[0].name: missing (required; such as name: grid-carbon)"},
		{"bad name", sig("name: grid carbon, url: http://h/, above: 1"),
			`t.yaml:5:14: protect.signals[0].name: "grid carbon" is not a valid name (letters, digits, '_', '-', '.'; at most 64; such as grid-carbon)`},
		{"name not ASCII", sig("name: \"\u212a\", url: http://h/, above: 1"),
			`protect.signals[0].name: "` + "\u212a" + `" is not a valid name`},
		{"duplicate name", head + "protect:\n  signals:\n    - {name: a, url: http://h/, above: 1}\n    - {name: a, url: http://g/, above: 2}\n" + rule,
			`t.yaml:6:14: protect.signals[1].name: duplicate signal name "a" (first at line 5; each signal needs its own name)`},
		{"url missing", sig("name: a, above: 1"),
			"t.yaml:5:7: protect.signals[0].url: missing (required; such as url: http://127.0.0.1:9100/carbon)"},
		{"url scheme", sig("name: a, url: ftp://h/x, above: 1"),
			`t.yaml:5:22: protect.signals[0].url: "ftp://h/x": scheme "ftp" is not http or https (an http or https URL with a host, such as http://127.0.0.1:9100/carbon)`},
		{"url without host", sig("name: a, url: \"http:///x\", above: 1"),
			`t.yaml:5:22: protect.signals[0].url: "http:///x" has no valid host (an http or https URL with a host, such as http://127.0.0.1:9100/carbon)`},
		{"url with user info", sig("name: a, url: \"http://u:secret@h/x\", above: 1"),
			`t.yaml:5:22: protect.signals[0].url: "http://xxxxx@h/x": user info and fragment are not used`},
		{"every too short", sig("name: a, url: http://h/, every: 500ms, above: 1"),
			"t.yaml:5:40: protect.signals[0].every: 500ms is out of range (at least 1s, at most 24h; default 30s)"},
		{"every not a duration", sig("name: a, url: http://h/, every: often, above: 1"),
			`t.yaml:5:40: protect.signals[0].every: "often" is not a duration (such as 30s, 5m; default 30s)`},
		{"timeout above every", sig("name: a, url: http://h/, every: 2s, timeout: 3s, above: 1"),
			"t.yaml:5:53: protect.signals[0].timeout: 3s is out of range (more than 0, at most every (2s); default the lesser of every and 5s)"},
		{"timeout zero", sig("name: a, url: http://h/, timeout: 0s, above: 1"),
			"t.yaml:5:42: protect.signals[0].timeout: 0s is out of range (more than 0, at most every (30s); default the lesser of every and 5s)"},
		{"above missing", sig("name: a, url: http://h/"),
			"t.yaml:5:7: protect.signals[0].above: missing (required; such as above: 400)"},
		{"above not a number", sig("name: a, url: http://h/, above: high"),
			`t.yaml:5:40: protect.signals[0].above: "high" is not a number (the line above which sluice degrades, such as 400 or 0.75)`},
		{"above infinite", sig("name: a, url: http://h/, above: .inf"),
			`protect.signals[0].above: ".inf" is not a number`},
		{"above NaN", sig("name: a, url: http://h/, above: NaN"),
			`protect.signals[0].above: "NaN" is not a number`},
		{"signals beside shed_from without max_in_flight", head + "protect: {shed_from: 0.5, signals: []}\n" + rule,
			"t.yaml:3:10: protect.max_in_flight: missing (required; such as max_in_flight: 200)"},
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
