package config

import (
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"go.yaml.in/yaml/v3"
)

// delay decodes a rule's delay: a duration from 0 to limiter.MaxDelay.
// Whether the rule's algorithm takes one is policy.Compile's to say, at
// the same path; that it cannot go with concurrency is said here, as the
// two are fields of the file's one rule.
func (d *decoder) delay(m map[string]*yaml.Node, path string) time.Duration {
	n := m["delay"]
	v, ok := d.durationIn(n, path, func(v time.Duration) bool { return v >= 0 && v <= limiter.MaxDelay },
		"such as 500ms, 2s; how long a request may wait for its turn", "0 to "+limiter.MaxDelay.String())
	if !ok {
		return 0
	}
	if !isNull(m["concurrency"]) {
		d.fail(n, path, "a concurrency rule holds nothing for its turn (delay goes with rate on token_bucket, gcra or leaky_bucket)")
		return 0
	}
	return v
}
