package throttle

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Adaptive configures a limit that follows the upstream's latency, between
// MinInFlight and Config.MaxInFlight.
type Adaptive struct {
	// MinInFlight is the floor (> 0, at most MaxInFlight).
	MinInFlight int
	// LatencyTarget is the upstream's p99 objective (> 0): a window whose
	// p99 is above it shrinks the limit, one at or below it lets the limit
	// grow back.
	LatencyTarget time.Duration
	// Window is how long latencies are gathered before the limit moves; 0
	// means 1s. A window lasts until it has MinSamples outcomes too.
	Window time.Duration
	// MinSamples is the fewest outcomes a window decides on; 0 means 20.
	MinSamples int
}

// Adaptive's defaults.
const (
	defaultWindow     = time.Second
	defaultMinSamples = 20
	// reservoirSize bounds the latencies kept per window: beyond it the
	// window keeps a uniform sample of them (reservoir sampling).
	reservoirSize = 512
	// maxShrink is the most one window takes off: the limit at least halves
	// (Netflix's AIMD backs off by 0.9, Gradient2 clamps its gradient at
	// 0.5; halving is the bound, not the usual step).
	maxShrink = 0.5
)

func (a *Adaptive) check(maxInFlight int) []error {
	var errs []error
	if a.MinInFlight <= 0 || a.MinInFlight > maxInFlight {
		errs = append(errs, fmt.Errorf("throttle: adaptive min_in_flight %d: want a whole number from 1 to max_in_flight (%d)", a.MinInFlight, maxInFlight))
	}
	if a.LatencyTarget <= 0 {
		errs = append(errs, fmt.Errorf("throttle: adaptive latency_target %v: want a duration above 0", a.LatencyTarget))
	}
	if a.Window < 0 || a.MinSamples < 0 {
		errs = append(errs, fmt.Errorf("throttle: adaptive window %v, min_samples %d: want 0 (the default) or more", a.Window, a.MinSamples))
	}
	return errs
}

// window gathers one window's outcomes. It is guarded by the Throttle's
// mutex.
type window struct {
	cfg     Adaptive
	max     int
	start   time.Time
	samples [reservoirSize]time.Duration
	seen    int // latency samples offered this window
	drops   int // 503s, 504s, timeouts and failures this window
	peak    int // the most in flight this window
}

func newWindow(cfg Adaptive, maxInFlight int, now time.Time) *window {
	if cfg.Window == 0 {
		cfg.Window = defaultWindow
	}
	if cfg.MinSamples == 0 {
		cfg.MinSamples = defaultMinSamples
	}
	return &window{cfg: cfg, max: maxInFlight, start: now}
}

// latency records an upstream answer's latency; rnd picks a reservoir slot
// once the reservoir is full.
func (w *window) latency(d time.Duration, rnd func() float64) {
	if w.seen < reservoirSize {
		w.samples[w.seen] = d
	} else if j := int(rnd() * float64(w.seen+1)); j < reservoirSize {
		w.samples[j] = d
	}
	w.seen++
}

// next returns the limit after now, and whether the window closed: limit
// unchanged while the window is open.
func (w *window) next(now time.Time, limit int) (int, bool) {
	if now.Before(w.start) { // the clock went back: start again from now
		w.start = now
	}
	if now.Sub(w.start) < w.cfg.Window || w.seen+w.drops < w.cfg.MinSamples {
		return limit, false
	}
	kept := w.samples[:min(w.seen, reservoirSize)]
	slices.Sort(kept)
	limit = nextLimit(w.cfg, w.max, limit, p99(kept), w.seen, w.drops, w.peak)
	w.start, w.seen, w.drops, w.peak = now, 0, 0, 0
	return limit, true
}

// p99 returns the 99th percentile of sorted latencies by nearest rank, but
// never a lone largest value: below 100 latencies the nearest rank is the
// maximum, and one slow answer in a small window (the 1% an upstream
// meeting its p99 objective is allowed) would shrink the limit, every
// other window at 50 answers a window. It takes the second largest there,
// as the nearest rank does from 100 to 199 latencies. 0 for none.
func p99(sorted []time.Duration) time.Duration {
	n := len(sorted)
	switch {
	case n == 0:
		return 0
	case n < 100:
		return sorted[max(n-2, 0)]
	}
	return sorted[int(math.Ceil(0.99*float64(n)))-1]
}

// nextLimit is the control law, applied once per window:
//
//   - p99 above the target: multiply by the gradient target/p99;
//   - drops (503, 504, timeouts, failures) in the window: multiply by the
//     share that did not drop;
//   - either way by at least maxShrink, taking off at least one;
//   - otherwise, if the window used at least half the limit, add a tenth of
//     it (at least one); an unused limit does not grow (it would prove
//     nothing about the upstream).
//
// The result stays within [MinInFlight, max].
func nextLimit(cfg Adaptive, maxInFlight, limit int, p99 time.Duration, seen, drops, peak int) int {
	factor := 1.0
	if seen > 0 && p99 > cfg.LatencyTarget {
		factor = float64(cfg.LatencyTarget) / float64(p99)
	}
	if drops > 0 {
		factor = min(factor, 1-float64(drops)/float64(seen+drops))
	}
	switch {
	case factor < 1:
		limit = min(int(float64(limit)*max(factor, maxShrink)), limit-1)
	case 2*peak >= limit:
		limit += max(1, limit/10)
	}
	return min(max(limit, cfg.MinInFlight), maxInFlight)
}
