package failover_test

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store/failover"
)

// TestBackgroundProbe: with BackgroundProbe, an instance that nobody calls
// finds out by itself that the shared store is back, one probe per
// ProbeInterval; while it is down the probes keep failing and it stays
// degraded. Close stops the prober (TestMain checks for leaks).
func TestBackgroundProbe(t *testing.T) {
	f := newFixture(t, failover.Options{Threshold: 1, ProbeInterval: time.Second, BackgroundProbe: true})
	if n := f.tickers.Load(); n != 1 {
		t.Fatalf("with BackgroundProbe the store made %d tickers, want 1", n)
	}
	l := must(t, limiter.FixedWindow, 10, time.Minute, 0)
	f.shared.down.Store(true)
	_, _ = f.decide("a", l, 1)
	if !f.fo.Degraded() {
		t.Fatal("not degraded after Threshold failures")
	}
	before := f.shared.calls.Load()
	f.clk.Advance(time.Second)
	waitUntil(t, "a background probe", func() bool { return f.shared.calls.Load() == before+1 })
	if !f.fo.Degraded() {
		t.Fatal("a failed probe closed the circuit")
	}
	f.shared.down.Store(false)
	f.clk.Advance(time.Second)
	waitUntil(t, "the circuit to close without a request", func() bool { return !f.fo.Degraded() })
	if got := f.shared.calls.Load(); got != before+2 {
		t.Errorf("%d probes for two intervals, want 2", got-before)
	}
}

// TestNoBackgroundProbeByDefault: without BackgroundProbe, nothing runs on
// the clock (no ticker), and time passing probes nothing.
func TestNoBackgroundProbeByDefault(t *testing.T) {
	f := newFixture(t, failover.Options{Threshold: 1, ProbeInterval: time.Second})
	if n := f.tickers.Load(); n != 0 {
		t.Fatalf("without BackgroundProbe the store made %d tickers, want none", n)
	}
	l := must(t, limiter.FixedWindow, 10, time.Minute, 0)
	f.shared.down.Store(true)
	_, _ = f.decide("a", l, 1)
	before := f.shared.calls.Load()
	f.shared.down.Store(false)
	f.clk.Advance(5 * time.Second)
	if got := f.shared.calls.Load(); got != before || !f.fo.Degraded() {
		t.Errorf("without BackgroundProbe: %d calls while idle, degraded %v; want none, still degraded", got-before, f.fo.Degraded())
	}
}

// waitUntil polls cond for up to 5 seconds of real time: the prober runs
// in its own goroutine after the fake clock ticks.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for range 500 {
		if cond() {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
