package config

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-rl/sluice/throttle"
	"go.yaml.in/yaml/v3"
)

// Defaults and bounds of the protect block.
const (
	MaxInFlightBound      = 1 << 20 // the largest max_in_flight (and queue.max_length) accepted
	DefaultShedFrom       = 0.8
	DefaultQueueMaxLength = 1000
	DefaultQueueMaxWait   = time.Second
	DefaultMinInFlight    = 1
)

var (
	protectFields  = []string{"max_in_flight", "adaptive", "queue", "shed_from", "upstream_backoff", "signals"}
	adaptiveFields = []string{"min_in_flight", "latency_target"}
	queueFields    = []string{"max_wait", "max_length"}
	priorityNames  = []string{"critical", "high", "normal", "low"}
)

// protect decodes the protect block into what the gateway's Throttle
// enforces and the signals it reads. The Throttle's part is nil when the
// file has none (nothing is throttled): no protect block, or one with
// signals alone.
func (d *decoder) protect(n *yaml.Node, path string) (*throttle.Config, []Signal) {
	if isNull(n) {
		return nil, nil
	}
	m := d.fields(n, path, "a mapping (max_in_flight, adaptive, queue, shed_from, upstream_backoff, signals)", protectFields)
	if d.failed[path] {
		return nil, nil
	}
	signals := d.signals(m["signals"], join(path, "signals"))
	if len(m) == 1 && m["signals"] != nil {
		return nil, signals // degrade by signals, throttle nothing
	}
	cfg := &throttle.Config{MaxInFlight: 1}
	if d.required(m, n, path, "max_in_flight", "max_in_flight: 200") {
		cfg.MaxInFlight = int(d.integer(m["max_in_flight"], join(path, "max_in_flight"), 1, MaxInFlightBound, 1,
			"1 to "+strconv.Itoa(MaxInFlightBound)+": requests at the upstream at once"))
	}
	cfg.Adaptive = d.adaptive(m["adaptive"], join(path, "adaptive"), cfg.MaxInFlight)
	cfg.Queue = d.queue(m["queue"], join(path, "queue"))
	cfg.ShedFrom = d.shedFrom(m["shed_from"], join(path, "shed_from"))
	cfg.UpstreamBackoff = d.boolean(m["upstream_backoff"], join(path, "upstream_backoff"))
	return cfg, signals
}

// adaptive decodes protect.adaptive; maxInFlight bounds min_in_flight.
func (d *decoder) adaptive(n *yaml.Node, path string, maxInFlight int) *throttle.Adaptive {
	if isNull(n) {
		return nil
	}
	m := d.fields(n, path, "a mapping (min_in_flight, latency_target)", adaptiveFields)
	if d.failed[path] {
		return nil
	}
	a := &throttle.Adaptive{MinInFlight: DefaultMinInFlight}
	if mn := m["min_in_flight"]; !isNull(mn) {
		v := d.integer(mn, join(path, "min_in_flight"), 1, MaxInFlightBound, DefaultMinInFlight,
			"1 to max_in_flight; default "+strconv.Itoa(DefaultMinInFlight))
		if v > int64(maxInFlight) {
			d.fail(mn, join(path, "min_in_flight"), "%d is more than max_in_flight %d (the adaptive limit moves between min_in_flight and max_in_flight: at most %d)", v, maxInFlight, maxInFlight)
		}
		a.MinInFlight = int(min(v, int64(maxInFlight)))
	}
	if d.required(m, n, path, "latency_target", "latency_target: 250ms") {
		// Required: no default to name, unlike the server's timeouts.
		a.LatencyTarget, _ = d.durationIn(m["latency_target"], join(path, "latency_target"),
			func(v time.Duration) bool { return v > 0 && v <= maxServerDuration },
			"such as 250ms, 1s: the upstream's p99 objective", "more than 0, at most 24h")
	}
	return a
}

// queue decodes protect.queue. Absent, there is no queue: a request that
// finds the service full is refused at once.
func (d *decoder) queue(n *yaml.Node, path string) throttle.Queue {
	if isNull(n) {
		return throttle.Queue{}
	}
	m := d.fields(n, path, "a mapping (max_wait, max_length)", queueFields)
	var q throttle.Queue
	q.MaxWait = d.timeout(m["max_wait"], join(path, "max_wait"), DefaultQueueMaxWait, false)
	q.MaxLength = int(d.integer(m["max_length"], join(path, "max_length"), 0, MaxInFlightBound, DefaultQueueMaxLength,
		"0 (no queue) to "+strconv.Itoa(MaxInFlightBound)+"; default "+strconv.Itoa(DefaultQueueMaxLength)))
	return q
}

// shedFrom decodes protect.shed_from: a share of the limit in (0, 1].
func (d *decoder) shedFrom(n *yaml.Node, path string) float64 {
	s, ok := d.scalar(n, path, "a number in (0, 1]")
	if !ok {
		return DefaultShedFrom
	}
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil || math.IsNaN(v) || strings.ContainsAny(s, "xXpP_"):
		d.fail(n, path, "%q is not a number (a share of the limit in (0, 1], such as 0.8; default %v)", clip(s), DefaultShedFrom)
	case v <= 0 || v > 1:
		d.fail(n, path, "%s is out of range (more than 0, at most 1: a share of the limit, such as 0.8; default %v)", clip(s), DefaultShedFrom)
	default:
		return v
	}
	return DefaultShedFrom
}

// priority decodes a rule's priority: critical, high, normal (the default)
// or low.
func (d *decoder) priority(n *yaml.Node, path string) throttle.Priority {
	s := d.oneOf(n, path, "normal", priorityNames)
	p, _ := throttle.ParsePriority(s)
	return p
}
