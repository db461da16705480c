package sluice_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice"
	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store/memory"
)

// waitClock is a fake clock that reports each ticker made on it: a Wait
// starting to wait, so that a test advances the clock only then.
type waitClock struct {
	*clock.Fake
	waits chan time.Duration
}

func (c waitClock) NewTicker(d time.Duration) clock.Ticker {
	t := c.Fake.NewTicker(d)
	c.waits <- d
	return t
}

// newWaiting returns a limiter whose waits are reported, over a memory
// store on the same fake clock (whose sweeper is not reported).
func newWaiting(t *testing.T, limit limiter.Limit) (*sluice.Limiter, waitClock) {
	t.Helper()
	c := waitClock{Fake: clock.NewFake(start), waits: make(chan time.Duration, 16)}
	st := memory.New(memory.Options{Clock: c.Fake})
	t.Cleanup(func() { _ = st.Close() })
	return sluice.New(limit, sluice.Options{Store: st, Clock: c}), c
}

// waitInBackground runs Wait and returns its result channel once Wait has
// started waiting d.
func waitInBackground(t *testing.T, ctx context.Context, lim *sluice.Limiter, c waitClock, want time.Duration) <-chan error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- lim.Wait(ctx, "k") }()
	select {
	case d := <-c.waits:
		if d != want {
			t.Fatalf("Wait waits %v, want %v", d, want)
		}
	case err := <-done:
		t.Fatalf("Wait returned %v without waiting", err)
	case <-time.After(10 * time.Second): // an upper bound, not a timing assertion
		t.Fatal("Wait did not start waiting")
	}
	return done
}

func result(t *testing.T, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("Wait did not return")
		return nil
	}
}

// gcra 10/s burst 1: one request every 100ms.
var tenPerSecond = limiter.MustNew(limiter.GCRA, 10, time.Second, 1)

// Wait holds the request for its turn, its cost counted at once, so the
// turns that follow queue behind it.
func TestWaitHoldsForTurn(t *testing.T) {
	lim, c := newWaiting(t, tenPerSecond)
	ctx := context.Background()
	if err := lim.Wait(ctx, "k"); err != nil { // at once: no ticker
		t.Fatal(err)
	}
	done := waitInBackground(t, ctx, lim, c, 100*ms)
	c.Advance(99 * ms)
	select {
	case err := <-done:
		t.Fatalf("Wait returned %v before its turn", err)
	default:
	}
	c.Advance(ms)
	if err := result(t, done); err != nil {
		t.Fatal(err)
	}
	if r, _ := lim.Reserve(ctx, "k"); r.Delay() != 100*ms { // the waited request was counted
		t.Errorf("next turn in %v, want 100ms", r.Delay())
	}
}

// A turn after the context's deadline is refused at once, spending
// nothing, whatever the clock.
func TestWaitRefusesPastDeadline(t *testing.T) {
	lim, c := newWaiting(t, limiter.MustNew(limiter.GCRA, 1, time.Hour, 1))
	if !lim.Allow(context.Background(), "k") {
		t.Fatal("first request refused")
	}
	// The turn is in an hour: held at most until the deadline, a place in
	// the queue frees in 30 minutes, but the turn is still after the
	// deadline. (The deadline is real time: far enough ahead that no
	// pause of a loaded machine reaches it.)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- lim.Wait(ctx, "k") }()
	var err error
	select {
	case err = <-done:
	case d := <-c.waits: // a Wait that waits would wait until the deadline
		cancel()
		t.Fatalf("Wait waits %v instead of refusing at once (then %v)", d, <-done)
	}
	if !errors.Is(err, sluice.ErrDeadline) {
		t.Fatalf("Wait = %v, want ErrDeadline", err)
	}
	if len(c.waits) != 0 {
		t.Error("Wait waited before refusing")
	}
	if r, _ := lim.Reserve(context.Background(), "k"); r.Delay() != time.Hour {
		t.Errorf("next turn in %v, want 1h: the refused Wait spent", r.Delay())
	}
}

// A Wait whose context ends while it waits returns the context's error
// and gives its turn back.
func TestWaitCancelledGivesBack(t *testing.T) {
	lim, c := newWaiting(t, tenPerSecond)
	if !lim.Allow(context.Background(), "k") {
		t.Fatal("first request refused")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := waitInBackground(t, ctx, lim, c, 100*ms)
	cancel()
	if err := result(t, done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait = %v, want context.Canceled", err)
	}
	if r, _ := lim.Reserve(context.Background(), "k"); r.Delay() != 100*ms {
		t.Errorf("next turn in %v, want 100ms: the cancelled turn was not given back", r.Delay())
	}
}

// Under a window algorithm Wait waits for the window to end and asks
// again.
func TestWaitWindow(t *testing.T) {
	lim, c := newWaiting(t, limiter.MustNew(limiter.FixedWindow, 1, time.Minute, 0))
	c.Advance(20 * time.Second)
	if !lim.Allow(context.Background(), "k") {
		t.Fatal("first request refused")
	}
	done := waitInBackground(t, context.Background(), lim, c, 40*time.Second)
	c.Advance(40 * time.Second)
	if err := result(t, done); err != nil {
		t.Fatal(err)
	}
	if lim.Allow(context.Background(), "k") {
		t.Error("the waited request was not counted")
	}
}

func TestWaitNeverAndEnded(t *testing.T) {
	lim, _ := newWaiting(t, tenPerSecond)
	if err := lim.WaitN(context.Background(), "k", 2); !errors.Is(err, sluice.ErrNever) {
		t.Errorf("WaitN above the burst = %v, want ErrNever", err)
	}
	if err := lim.WaitN(context.Background(), "k", -1); !errors.Is(err, sluice.ErrNever) || !strings.Contains(err.Error(), "cost -1 (a cost is 0 or more)") {
		t.Errorf("WaitN of a negative cost = %v, want ErrNever saying a cost is 0 or more", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := lim.Wait(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Errorf("Wait on an ended context = %v", err)
	}
	if !lim.Allow(context.Background(), "k") {
		t.Error("a Wait on an ended context spent")
	}
}

// Cancel gives a reservation back once; a later reservation behind it
// keeps it from giving back at all.
func TestReservationCancel(t *testing.T) {
	lim, _ := newFake(t, tenPerSecond)
	ctx := context.Background()
	a, _ := lim.Reserve(ctx, "k")
	b, _ := lim.Reserve(ctx, "k")
	if a.Delay() != 0 || b.Delay() != 100*ms {
		t.Fatalf("delays %v, %v; want 0, 100ms", a.Delay(), b.Delay())
	}
	if err := a.Cancel(ctx); err != nil { // b is behind it: nothing given back
		t.Fatal(err)
	}
	if err := b.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Cancel(ctx); err != nil { // at most once
		t.Fatal(err)
	}
	if r, _ := lim.Reserve(ctx, "k"); r.Delay() != 100*ms {
		t.Errorf("next turn in %v, want 100ms (b given back, a not)", r.Delay())
	}
}

// Once its turn has come, a reservation's request may have gone on: Cancel
// gives nothing back, as golang.org/x/time/rate's does not, so that the
// next turn still keeps the rate after it.
func TestReservationCancelAfterTurn(t *testing.T) {
	lim, fake := newFake(t, tenPerSecond)
	ctx := context.Background()
	if _, err := lim.Reserve(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	b, _ := lim.Reserve(ctx, "k")
	if b.Delay() != 100*ms {
		t.Fatalf("turn in %v, want 100ms", b.Delay())
	}
	fake.Advance(150 * ms) // b's turn came 50ms ago
	if err := b.Cancel(ctx); err != nil {
		t.Fatal(err)
	}
	if r, _ := lim.Reserve(ctx, "k"); r.Delay() != 50*ms {
		t.Errorf("next turn in %v, want 50ms: a reservation was given back after its turn", r.Delay())
	}
}
