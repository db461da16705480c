package throttle

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

const target = 100 * time.Millisecond

// The control law, one window at a time (limit 100, floor 8, ceiling 100
// unless said).
func TestNextLimit(t *testing.T) {
	cfg := Adaptive{MinInFlight: 8, LatencyTarget: target}
	for _, c := range []struct {
		name              string
		limit             int
		p99               time.Duration
		seen, drops, peak int
		want              int
	}{
		{"p99 at twice the target halves", 100, 2 * target, 100, 0, 100, 50},
		{"p99 at 1.25x: gradient 0.8", 100, 125 * time.Millisecond, 100, 0, 100, 80},
		{"p99 far above: at most halved", 100, 10 * target, 100, 0, 100, 50},
		{"p99 just above: at least one off", 10, 101 * time.Millisecond, 100, 0, 10, 9},
		{"p99 at the target, limit in use: +10%", 60, target, 100, 0, 60, 66},
		{"growth stops at the ceiling", 95, target / 2, 100, 0, 95, 100},
		{"unused limit does not grow", 60, target / 2, 100, 0, 29, 60},
		{"half used grows", 60, target / 2, 100, 0, 30, 66},
		{"small limit grows by one", 9, target / 2, 100, 0, 9, 10},
		{"10% drops: x0.9", 100, target / 2, 90, 10, 100, 90},
		{"only drops: halved", 100, 0, 0, 40, 100, 50},
		{"drops and slow: the smaller factor", 100, 2 * target, 99, 1, 100, 50},
		{"never below the floor", 9, 2 * target, 100, 0, 9, 8},
		{"at the floor stays", 8, 2 * target, 100, 0, 8, 8},
	} {
		if got := nextLimit(cfg, 100, c.limit, c.p99, c.seen, c.drops, c.peak); got != c.want {
			t.Errorf("%s: nextLimit(limit %d, p99 %v, seen %d, drops %d, peak %d) = %d, want %d",
				c.name, c.limit, c.p99, c.seen, c.drops, c.peak, got, c.want)
		}
	}
}

// adaptiveThrottle has no queue, so a full service refuses and runWindow
// can find the limit by filling it.
func adaptiveThrottle(t *testing.T, minIn, maxIn int) *harness {
	th, clk := newThrottle(t, Config{MaxInFlight: maxIn, Adaptive: &Adaptive{MinInFlight: minIn, LatencyTarget: target, MinSamples: 1}})
	return &harness{t: t, th: th, clk: clk}
}

type harness struct {
	t   *testing.T
	th  *Throttle
	clk interface{ Advance(time.Duration) }
}

// window runs one adaptive window: it fills every slot, lets the window
// pass and releases them all with o (the last one closes the window). It
// returns the limit after.
func (h *harness) window(o Outcome) int {
	l, _ := h.admitted(o)
	return l
}

// admitted is window that also returns how many requests it admitted.
func (h *harness) admitted(o Outcome) (limit, admitted int) {
	var held []Decision
	for {
		d := h.th.Acquire(context.Background(), Request{Priority: Critical})
		if !d.Admitted {
			break
		}
		held = append(held, d)
	}
	if len(held) == 0 {
		h.t.Fatal("no slot")
	}
	h.clk.Advance(time.Second - time.Millisecond)
	for i := range held[1:] {
		held[i+1].Release(o)
	}
	h.clk.Advance(time.Millisecond)
	held[0].Release(o)
	return h.th.Limit(), len(held)
}

// Envoy #8337 and #18152: Envoy re-measures its minRTT every interval by
// pinning the limit to min_concurrency, which refuses healthy traffic (503
// dips) at a steady state. Here the baseline is the configured target, not a
// measured minimum, so a healthy upstream keeps its limit at the ceiling in
// every window, however long: every window admits 50 (a probe that pins
// the limit for one window and restores it at the window's end admits
// fewer).
func TestAdaptiveHealthyNeverDips(t *testing.T) {
	h := adaptiveThrottle(t, 5, 50)
	for w := range 300 {
		if l, n := h.admitted(Outcome{Latency: target / 2}); l != 50 || n != 50 {
			t.Fatalf("window %d: admitted %d, limit after %d, want 50 throughout", w, n, l)
		}
	}
}

// Envoy #38338: with a high floor the limit sits at the floor under
// sustained degradation and Envoy never recovers (its new minRTT is
// measured while overloaded). Here it holds the floor, never below, and
// grows back as soon as latency is within the target again.
func TestAdaptiveHighFloorRecovers(t *testing.T) {
	h := adaptiveThrottle(t, 50, 100)
	for w := range 50 {
		if l := h.window(Outcome{Latency: 4 * target}); l != 50 {
			t.Fatalf("degraded window %d: limit %d, want the floor 50", w, l)
		}
	}
	var got []int
	for range 9 {
		got = append(got, h.window(Outcome{Latency: target}))
	}
	want := []int{55, 60, 66, 72, 79, 86, 94, 100, 100} // +10% a window
	if !slices.Equal(got, want) {
		t.Fatalf("recovery %v, want %v", got, want)
	}
}

// Netflix concurrency-limits PR #134: Gradient2's "+queueSize" term grows
// the limit without bound when the gradient sits near 0.8. Here a p99 at
// 1.25 times the target (gradient 0.8) only ever shrinks the limit, down to
// the floor, however many windows it lasts.
func TestAdaptiveModerateOverloadNeverGrows(t *testing.T) {
	h := adaptiveThrottle(t, 8, 100)
	prev := 100
	var got []int
	for w := range 100 {
		l := h.window(Outcome{Latency: 125 * time.Millisecond})
		if l > prev {
			t.Fatalf("window %d: limit grew from %d to %d at gradient 0.8", w, prev, l)
		}
		prev = l
		if w < 6 {
			got = append(got, l)
		}
	}
	if want := []int{80, 64, 51, 40, 32, 25}; !slices.Equal(got, want) || prev != 8 {
		t.Fatalf("limits %v ... %d, want %v ... 8", got, prev, want)
	}
}

// Netflix concurrency-limits #176: a dropped request recorded as a
// near-zero latency keeps the limiter dropping (or, here, would make a
// failing upstream look fast). Fast 503s and timeouts shrink the limit;
// they never count as latencies. Canceled requests say nothing.
func TestAdaptiveDropsAreNotLatencies(t *testing.T) {
	h := adaptiveThrottle(t, 4, 64)
	for _, s := range []struct {
		o    Outcome
		want int
	}{
		{Outcome{Status: 503, Latency: time.Millisecond}, 32}, // all drops: halved
		{Outcome{Status: 504, Latency: time.Millisecond}, 16},
		{Outcome{Timeout: true, Latency: time.Millisecond}, 8}, // fast: as a latency it would grow
		{Outcome{Failed: true, Latency: time.Millisecond}, 4},
		{Outcome{Status: 200, Latency: time.Millisecond}, 5}, // healthy again: +1
		{Outcome{Status: 429, Latency: time.Millisecond}, 5}, // one caller refused: no signal
		{Outcome{Canceled: true, Latency: time.Millisecond}, 5},
		{Outcome{Status: 500, Latency: 3 * target}, 4}, // a 500 did the work: its latency counts
	} {
		if l := h.window(s.o); l != s.want {
			t.Fatalf("after a window of %+v: limit %d, want %d", s.o, l, s.want)
		}
	}
}

// Without a latency in the Outcome, the time from admission to Release is
// the latency; a window stays open until it has lasted Window.
func TestAdaptiveMeasuresLatency(t *testing.T) {
	th, clk := newThrottle(t, Config{MaxInFlight: 10, Adaptive: &Adaptive{MinInFlight: 1, LatencyTarget: target, MinSamples: 1}})
	for i := range 5 {
		d := th.Acquire(context.Background(), Request{})
		clk.Advance(2 * target) // twice the target
		d.Release(Outcome{})
		if l := th.Limit(); i < 4 && l != 10 {
			t.Fatalf("release %d at %v: limit %d before the window ended", i, 2*target*time.Duration(i+1), l)
		}
	}
	if l := th.Limit(); l != 5 { // the window closed at 1s: p99 200ms, halved
		t.Fatalf("limit %d, want 5", l)
	}
	clk.Advance(-time.Hour) // the clock goes back: a new window starts there
	d := th.Acquire(context.Background(), Request{})
	d.Release(Outcome{Latency: target})
	if l := th.Limit(); l != 5 {
		t.Fatalf("after the clock went back: limit %d, want 5 (the window restarted)", l)
	}
}

// When the limit shrinks below what is in flight, nothing more is
// admitted until enough have left; the ceiling is never the issue.
func TestAdaptiveShrinkBelowInFlight(t *testing.T) {
	h := adaptiveThrottle(t, 1, 10)
	h.window(Outcome{Latency: 2 * target}) // 5
	s := h.th.Stats()
	if s.Limit != 5 || s.MaxInFlight != 10 {
		t.Fatalf("stats %+v", s)
	}
}

func TestAdaptiveConfigErrors(t *testing.T) {
	for _, c := range []struct {
		a    Adaptive
		want string
	}{
		{Adaptive{MinInFlight: 11, LatencyTarget: target}, "min_in_flight 11: want a whole number from 1 to max_in_flight (10)"},
		{Adaptive{MinInFlight: 0, LatencyTarget: target}, "min_in_flight 0"},
		{Adaptive{MinInFlight: 1}, "latency_target 0s: want a duration above 0"},
		{Adaptive{MinInFlight: 1, LatencyTarget: target, Window: -1}, "window -1ns"},
	} {
		_, err := New(Config{MaxInFlight: 10, Adaptive: &c.a})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("New(%+v) = %v, want an error containing %q", c.a, err, c.want)
		}
	}
}

// Beyond 512 latencies a window keeps a uniform sample: slow answers that
// come after the first 512 still make its p99 (15% of 600 are slow here).
func TestAdaptiveReservoir(t *testing.T) {
	th, clk := newThrottle(t, Config{MaxInFlight: 100, Rand: rand.New(rand.NewPCG(3, 4)).Float64,
		Adaptive: &Adaptive{MinInFlight: 1, LatencyTarget: target, MinSamples: 600}})
	for i := range 600 {
		d := th.Acquire(context.Background(), Request{})
		if i == 599 {
			clk.Advance(time.Second)
		}
		lat := target / 2
		if i >= 512 {
			lat = 10 * target
		}
		d.Release(Outcome{Latency: lat})
	}
	if l := th.Limit(); l != 50 {
		t.Fatalf("limit %d, want 50 (p99 far above the target: halved)", l)
	}
}

// An upstream that meets its objective exactly: 1 answer in 100 is slow
// (p99 at the target's edge, the tail the objective allows). With 50
// answers a window, every other window holds one slow answer; taking a
// window's maximum for its p99 below 100 samples halved the limit in each
// of them, and +10% a window in between could not make up for it: the
// limit fell to the floor on a healthy upstream (503 dips, as Envoy's
// probes caused). One answer never judges a window.
func TestAdaptiveOneOutlierPerWindow(t *testing.T) {
	th, clk := newThrottle(t, Config{MaxInFlight: 50, Adaptive: &Adaptive{MinInFlight: 5, LatencyTarget: target}})
	k := 0
	for w := range 40 {
		held := hold(t, th, th.Limit(), Request{})
		clk.Advance(time.Second / time.Duration(len(held)))
		for _, d := range held {
			lat := target / 2
			if k++; k%100 == 0 {
				lat = 3 * target
			}
			d.Release(Outcome{Latency: lat})
			clk.Advance(time.Second / 50)
		}
		if l := th.Limit(); l < 45 {
			t.Fatalf("window %d: limit %d on an upstream within its objective, want ≥ 45", w, l)
		}
	}
}
