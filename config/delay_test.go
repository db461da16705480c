package config

import (
	"strings"
	"testing"
	"time"
)

// TestDelayRefused: delay is refused on the window algorithms (the
// default sliding_window too), on a rule without a rate, with concurrency,
// out of range, unparsable, or too long to count exactly, each at its
// file:line:col with what is accepted.
func TestDelayRefused(t *testing.T) {
	for _, tc := range []struct{ name, rule, want string }{
		{"default algorithm", "{name: a, rate: 1/s, delay: 2s}",
			"t.yaml:3:37: rules[0].delay: sliding_window takes no delay (only token_bucket, gcra and leaky_bucket hold requests for their turn)"},
		{"fixed_window", "{name: a, algorithm: fixed_window, rate: 1/s, delay: 2s}",
			"t.yaml:3:62: rules[0].delay: fixed_window takes no delay (only token_bucket, gcra and leaky_bucket hold requests for their turn)"},
		{"sliding_log", "{name: a, algorithm: sliding_log, rate: 1/s, delay: 2s}",
			"t.yaml:3:61: rules[0].delay: sliding_log takes no delay (only token_bucket, gcra and leaky_bucket hold requests for their turn)"},
		{"no rate", "{name: a, priority: low, delay: 2s}",
			"t.yaml:3:41: rules[0].delay: a rule without a rate holds nothing (delay needs rate and token_bucket, gcra or leaky_bucket)"},
		{"negative", "{name: a, algorithm: gcra, rate: 1/s, delay: -1s}",
			"t.yaml:3:54: rules[0].delay: -1s is out of range (0 to 1h0m0s)"},
		{"too long", "{name: a, algorithm: gcra, rate: 1/s, delay: 2h}",
			"t.yaml:3:54: rules[0].delay: 2h0m0s is out of range (0 to 1h0m0s)"},
		{"not a duration", "{name: a, algorithm: gcra, rate: 1/s, delay: 2}",
			`t.yaml:3:54: rules[0].delay: "2" is not a duration (such as 500ms, 2s; how long a request may wait for its turn)`},
		{"inexact", "{name: a, algorithm: gcra, rate: 999999999/1ms, delay: 1h}",
			"t.yaml:3:64: rules[0].delay: delay 1h0m0s on gcra 999999999/1ms cannot be counted exactly (at most 9.006198s)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(head+"rules: ["+tc.rule+"]\n"))
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// TestDelayAccepted: delay on the three bucket algorithms reaches the
// rule's limit, plans' overrides included, and check's summary shows it.
func TestDelayAccepted(t *testing.T) {
	text := head + "clients: {list: [{id: p, keys: [k], plan: big}]}\nplans: {big: {up: 20/s}}\nrules:\n" +
		"  - {name: up, key: client, algorithm: leaky_bucket, rate: 10/s, burst: 1, delay: 2s}\n" +
		"  - {name: t, key: client, algorithm: token_bucket, rate: 10/s, delay: 500ms}\n" +
		"  - {name: g, key: client, algorithm: gcra, rate: 10/s, delay: 0s}\n"
	f, err := Parse("t.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	if got := f.Policy.Rules[0].Delay; got != 2*time.Second {
		t.Errorf("rule up: delay %v, want 2s", got)
	}
	c := f.Compiled
	for i, want := range []time.Duration{2 * time.Second, 500 * time.Millisecond, 0} {
		if got := c.RuleLimit(i).Delay(); got != want {
			t.Errorf("rule %d: limit's delay %v, want %v", i, got, want)
		}
	}
	if p, ok := c.CallerByID("p"); !ok || p.Limit(0).Delay() != 2*time.Second || p.Limit(0).Rate() != 20 {
		t.Errorf("the plan's override of rule up: %v", p.Limit(0))
	}
	var b strings.Builder
	if err := f.WriteSummary(&b); err != nil || !strings.Contains(b.String(), "1, delay 2s") {
		t.Errorf("the summary does not show the delay (%v):\n%s", err, b.String())
	}
}

// TestDelayWithConcurrency: delay on a concurrency rule is refused where
// it is written.
func TestDelayWithConcurrency(t *testing.T) {
	_, err := Parse("t.yaml", []byte(head+"rules: [{name: a, concurrency: 3, delay: 2s}]\n"))
	want := "t.yaml:3:42: rules[0].delay: a concurrency rule holds nothing for its turn (delay goes with rate on token_bucket, gcra or leaky_bucket)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v\nwant %s", err, want)
	}
}
