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
	s, ok := d.scalar(n, path, "a duration")
	if !ok {
		return 0
	}
	v, err := time.ParseDuration(s)
	switch {
	case err != nil:
		d.fail(n, path, "%q is not a duration (such as 500ms, 2s; how long a request may wait for its turn)", clip(s))
	case v < 0 || v > limiter.MaxDelay:
		d.fail(n, path, "%v is out of range (0 to %v)", v, limiter.MaxDelay)
	case !isNull(m["concurrency"]):
		d.fail(n, path, "a concurrency rule holds nothing for its turn (delay goes with rate on token_bucket, gcra or leaky_bucket)")
	default:
		return v
	}
	return 0
}
