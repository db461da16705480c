package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"go.yaml.in/yaml/v3"
)

const rateSyntax = "N/s, N/m, N/h, N/d or N/<duration> such as 100/m or 100/30s"

// ParseRate parses a rate as the configuration writes it: N requests per
// second, minute, hour or day (100/s, 100/m, 100/h, 100/d) or per Go
// duration (100/30s, 5/1500ms, 1000/36h). N is a whole number from 1 to
// 1,000,000,000 without sign or separators; the period is 1ms to 366 days, in
// whole microseconds. Limits that depend on the algorithm (sliding_log's
// 10,000, the burst) are checked by policy.Compile.
func ParseRate(s string) (policy.Rate, error) {
	count, per, ok := strings.Cut(s, "/")
	if !ok {
		return policy.Rate{}, fmt.Errorf("%q is not a rate (%s)", clip(s), rateSyntax)
	}
	if count == "" || strings.Trim(count, "0123456789") != "" {
		return policy.Rate{}, fmt.Errorf("%q: the count %q is not a whole number (digits only, such as 100/m)", clip(s), clip(count))
	}
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil || n > limiter.MaxRate {
		return policy.Rate{}, fmt.Errorf("%q: the count is too large (1 to %d)", clip(s), limiter.MaxRate)
	}
	if n < 1 {
		return policy.Rate{}, fmt.Errorf("%q: the count must be at least 1 (1 to %d)", clip(s), limiter.MaxRate)
	}
	period, err := parsePeriod(per)
	if err != nil {
		return policy.Rate{}, fmt.Errorf("%q: %w", clip(s), err)
	}
	return policy.Rate{N: n, Period: period}, nil
}

// parsePeriod parses the part of a rate after the slash.
func parsePeriod(s string) (time.Duration, error) {
	switch s {
	case "s":
		return time.Second, nil
	case "m":
		return time.Minute, nil
	case "h":
		return time.Hour, nil
	case "d":
		return 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil || s == "" || s[0] < '0' || s[0] > '9':
		return 0, fmt.Errorf("unknown period %q (s, m, h, d or a Go duration such as 30s, 1500ms or 36h)", clip(s))
	case d < limiter.MinPeriod || d > limiter.MaxPeriod:
		return 0, fmt.Errorf("period %v out of range (1ms to 366 days, 8784h)", d)
	case d%time.Microsecond != 0:
		return 0, fmt.Errorf("period %v is not a whole number of microseconds", d)
	}
	return d, nil
}

// rate decodes the rate at n; ok is false if it is absent or wrong
// (reported).
func (d *decoder) rate(n *yaml.Node, path string) (policy.Rate, bool) {
	s, ok := d.scalar(n, path, "a rate ("+rateSyntax+")")
	if !ok {
		return policy.Rate{}, false
	}
	r, err := ParseRate(s)
	if err != nil {
		d.fail(n, path, "%v", err)
		return policy.Rate{}, false
	}
	return r, true
}
