package failover_test

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
)

// breakerStep is one request of a circuit-breaker table: the clock moved by
// advance, the shared store up or down, and whether the request reached it.
type breakerStep struct {
	advance  time.Duration
	down     bool
	called   bool // the shared store received this request
	failed   bool // the answer came from the failure policy
	degraded bool // Degraded() afterwards
	why      string
}

// breakerTable is Threshold 3, ProbeInterval 500ms: three failures open the
// circuit, one probe per interval, a successful probe closes it.
var breakerTable = []breakerStep{
	{down: true, called: true, failed: true, why: "first failure"},
	{down: true, called: true, failed: true, why: "second failure"},
	{down: true, called: true, failed: true, degraded: true, why: "third failure opens the circuit"},
	{down: true, failed: true, degraded: true, why: "open: the shared store is not called"},
	{advance: 499 * time.Millisecond, down: true, failed: true, degraded: true, why: "1ms before the probe"},
	{advance: time.Millisecond, down: true, called: true, failed: true, degraded: true, why: "the probe, which fails"},
	{down: true, failed: true, degraded: true, why: "after a failed probe: not called"},
	{advance: 300 * time.Millisecond, failed: true, degraded: true, why: "up again, but no probe is due"},
	{advance: 200 * time.Millisecond, called: true, why: "the probe succeeds: shared again"},
	{called: true, why: "shared"},
	{down: true, called: true, failed: true, why: "one failure after a success does not open it"},
}

func TestCircuitBreakerInEveryMode(t *testing.T) {
	for _, mode := range []store.FailurePolicy{store.FailOpen, store.FailClosed, store.FailLocal} {
		t.Run(mode.String(), func(t *testing.T) {
			f := newFixture(t, failover.Options{OnFailure: mode, Threshold: 3, ProbeInterval: 500 * time.Millisecond, RetryAfter: 2 * time.Second})
			l := must(t, limiter.FixedWindow, 1000, time.Minute, 0)
			for i, s := range breakerTable {
				f.clk.Advance(s.advance)
				f.shared.down.Store(s.down)
				before := f.shared.calls.Load()
				d, err := f.decide("a", l, 1)
				if called := f.shared.calls.Load() > before; called != s.called {
					t.Errorf("step %d (%s): shared store called = %v, want %v", i, s.why, called, s.called)
				}
				checkAnswer(t, mode, i, s, d, err)
				if got := f.fo.Degraded(); got != s.degraded {
					t.Errorf("step %d (%s): Degraded() = %v, want %v", i, s.why, got, s.degraded)
				}
			}
			if got, want := f.transitions(), []bool{true, false}; !slices.Equal(got, want) {
				t.Errorf("OnStateChange calls %v, want %v (once per transition)", got, want)
			}
		})
	}
}

// checkAnswer checks the answer of breaker step i in mode.
func checkAnswer(t *testing.T, mode store.FailurePolicy, i int, s breakerStep, d limiter.Decision, err error) {
	t.Helper()
	if !s.failed || mode == store.FailLocal {
		if err != nil || !d.Allowed {
			t.Errorf("step %d (%s): got %+v, %v; want allowed", i, s.why, d, err)
		}
		return
	}
	var u *store.UnavailableError
	switch {
	case err == nil:
		t.Errorf("step %d (%s): no error in mode %v, want one", i, s.why, mode)
	case mode == store.FailOpen && errors.As(err, &u):
		t.Errorf("step %d (%s): open mode returned %v, want the failure itself (httplimit lets it pass)", i, s.why, err)
	case mode == store.FailClosed && !errors.As(err, &u):
		t.Errorf("step %d (%s): closed mode returned %T %v, want *store.UnavailableError", i, s.why, err, err)
	case mode == store.FailClosed && u.RetryAfter != 2*time.Second:
		t.Errorf("step %d (%s): UnavailableError.RetryAfter = %v, want Options.RetryAfter 2s", i, s.why, u.RetryAfter)
	}
}

// The failure itself is what open mode returns, and what closed mode's
// UnavailableError wraps.
func TestFailureIsReturnedOrWrapped(t *testing.T) {
	l := must(t, limiter.FixedWindow, 10, time.Minute, 0)
	open := newFixture(t, failover.Options{OnFailure: store.FailOpen})
	open.shared.down.Store(true)
	if _, err := open.decide("a", l, 1); !errors.Is(err, errDown) {
		t.Errorf("open: got %v, want the shared store's error", err)
	}
	closed := newFixture(t, failover.Options{OnFailure: store.FailClosed})
	closed.shared.down.Store(true)
	_, err := closed.decide("a", l, 1)
	var u *store.UnavailableError
	if !errors.As(err, &u) || !errors.Is(err, errDown) || u.RetryAfter != time.Second {
		t.Errorf("closed: got %#v, want *store.UnavailableError wrapping the failure, RetryAfter 1s (the default)", err)
	}
}

func TestStateNamesTheMode(t *testing.T) {
	for _, mode := range []store.FailurePolicy{store.FailOpen, store.FailClosed, store.FailLocal} {
		f := newFixture(t, failover.Options{OnFailure: mode, Threshold: 1})
		if got := f.fo.State(); got != "shared" {
			t.Errorf("%v: State() = %q before any failure, want shared", mode, got)
		}
		f.shared.down.Store(true)
		_, _ = f.decide("a", must(t, limiter.GCRA, 10, time.Second, 0), 1)
		if got, want := f.fo.State(), "degraded ("+mode.String()+")"; got != want {
			t.Errorf("%v: State() = %q after the circuit opened, want %q", mode, got, want)
		}
	}
}

// While the circuit is open, of many requests arriving when a probe is due
// exactly one reaches the shared store.
func TestOneProbeAtATime(t *testing.T) {
	f := newFixture(t, failover.Options{Threshold: 1, ProbeInterval: time.Second})
	l := must(t, limiter.FixedWindow, 10, time.Minute, 0)
	f.shared.down.Store(true)
	_, _ = f.decide("a", l, 1)
	if !f.fo.Degraded() {
		t.Fatal("not degraded after Threshold failures")
	}
	for round := 1; round <= 3; round++ {
		f.clk.Advance(time.Second)
		before := f.shared.calls.Load()
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() { _, _ = f.decide("a", l, 1) })
		}
		wg.Wait()
		if got := f.shared.calls.Load() - before; got != 1 {
			t.Errorf("round %d: %d of 32 concurrent requests probed the shared store, want 1", round, got)
		}
	}
}

// store/redis reports a failed request in its Result, not as DecideEach's
// error (it only returns store.ErrClosed there). Those failures must count
// for the circuit and go to the failure policy like any other.
func TestFailuresReportedPerResultOpenTheCircuit(t *testing.T) {
	f := newFixture(t, failover.Options{OnFailure: store.FailClosed, Threshold: 3})
	l := must(t, limiter.FixedWindow, 10, time.Minute, 0)
	f.shared.down.Store(true)
	f.shared.perResult.Store(true)
	for i := range 5 {
		_, err := f.decide("a", l, 1)
		var u *store.UnavailableError
		if !errors.As(err, &u) {
			t.Errorf("request %d: got %v, want *store.UnavailableError (on_failure: closed)", i, err)
		}
	}
	if !f.fo.Degraded() || f.shared.calls.Load() != 3 {
		t.Errorf("after 5 failed requests: Degraded() = %v, shared store called %d times; want true and 3 (Threshold)",
			f.fo.Degraded(), f.shared.calls.Load())
	}
	if got := f.fo.Stats().SharedErrors.Load(); got != 3 {
		t.Errorf("Stats().SharedErrors = %d, want 3", got)
	}
}
