package config

import (
	"strings"
	"testing"
)

// yearLog is a sliding_log of 10000 a year for three listed clients; %s is
// the store block.
const yearLog = head + `store: %s
clients:
  list:
    - { id: a, keys: [key-a] }
    - { id: b, keys: [key-b] }
    - { id: c, keys: [key-c] }
rules:
  - name: claims
    key: client
    algorithm: sliding_log
    rate: 10000/8784h
`

// The logs that always have room (listed clients', overflow counters')
// must fit the memory store's bound, or no bound holds.
func TestSlidingLogBound(t *testing.T) {
	for _, tc := range []struct {
		name, store, want string
	}{
		{"three full logs over 25000 entries", "{ memory: { max_log_entries: 25000 } }",
			"t.yaml:13:11: rules[0].rate: sliding_log 10000/8784h: the logs that always have room (3 of listed clients, " +
				"0 of overflow counters, over every sliding_log rule) could hold 30000 entries, more than " +
				"store.memory.max_log_entries 25000 (raise max_log_entries, lower N, or use sliding_window or gcra, " +
				"which keep two numbers per caller)"},
		{"the default bound", "{}", ""},
		{"exactly at the bound", "{ memory: { max_log_entries: 30000 } }", ""},
		{"redis keeps its own logs", "{ type: redis, memory: { max_log_entries: 10000 } }", ""},
		{"local fallback at a third", "{ type: redis, on_failure: local, instances: 3, memory: { max_log_entries: 10000 } }", ""},
		{"local fallback at a half", "{ type: redis, on_failure: local, instances: 2, memory: { max_log_entries: 10000 } }",
			"could hold 15000 entries, more than store.memory.max_log_entries 10000"},
		{"a bound below one log", "{ memory: { max_log_entries: 9999 } }",
			"t.yaml:3:37: store.memory.max_log_entries: 9999 is out of range (10000 to 1000000000; default 10000000)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("t.yaml", []byte(strings.Replace(yearLog, "%s", tc.store, 1)))
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// Callers that are not listed share one overflow counter per rule and
// limit: claims counts partner a's log and the anonymous callers' overflow
// counter, tenants one overflow counter (a's limit is the same).
func TestSlidingLogBoundCountsOverflowCounters(t *testing.T) {
	text := head + `store: { memory: { max_log_entries: 14999 } }
clients:
  unknown: anonymous
  list: [{ id: a, keys: [key-a] }]
rules:
  - { name: claims, key: client, algorithm: sliding_log, rate: 5000/h }
  - { name: tenants, key: "header:X-Tenant", algorithm: sliding_log, rate: 5000/h }
`
	_, err := Parse("t.yaml", []byte(text))
	want := "(1 of listed clients, 2 of overflow counters, over every sliding_log rule) could hold 15000 entries"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want one containing %q", err, want)
	}
}
