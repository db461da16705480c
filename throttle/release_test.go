package throttle

import (
	"context"
	"runtime"
	"strings"
	"testing"
)

// A Decision is a value: a caller that copies it (into a struct, a closure,
// a deferred call) and releases both copies must not give back two slots,
// or the ceiling is exceeded by one per double release.
func TestReleaseCopiesOnce(t *testing.T) {
	th, _ := newThrottle(t, Config{MaxInFlight: 2})
	ctx := context.Background()
	a := th.Acquire(ctx, Request{})
	b := th.Acquire(ctx, Request{})
	cp := a
	a.Release(Outcome{})
	cp.Release(Outcome{}) // a copy of a released Decision: nothing more
	if got := th.Stats().InFlight; got != 1 {
		t.Fatalf("in flight after releasing one slot through two copies: %d, want 1", got)
	}
	c := th.Acquire(ctx, Request{}) // takes the slot a gave back
	if d := th.Acquire(ctx, Request{}); d.Admitted {
		t.Fatal("a third slot under a ceiling of 2 after a copy was released twice")
	}
	// Stale copies of a slot given back and taken again do not release
	// its new holder.
	cp.Release(Outcome{})
	a.Release(Outcome{})
	if got := th.Stats().InFlight; got != 2 {
		t.Fatalf("in flight after releasing stale copies: %d, want 2 (b and c)", got)
	}
	stale := c
	c.Release(Outcome{})
	stale.Release(Outcome{})
	b.Release(Outcome{})
	if got := th.Stats().InFlight; got != 0 {
		t.Fatalf("in flight after every release: %d, want 0", got)
	}
}

// Release has a value receiver: a Decision kept in a map or returned from a
// call is released where it stands, and the copy made by the call is
// released once like any other.
func TestReleaseByValue(t *testing.T) {
	th, _ := newThrottle(t, Config{MaxInFlight: 2})
	held := map[string]Decision{"a": th.Acquire(context.Background(), Request{})}
	held["a"].Release(Outcome{})
	held["a"].Release(Outcome{})
	th.Acquire(context.Background(), Request{}).Release(Outcome{})
	if got := th.Stats().InFlight; got != 0 {
		t.Fatalf("in flight: %d, want 0", got)
	}
}

// The caller goes away at the instant its slot is handed over: its context
// ends while Release is dispatching to it, and it is already in leave,
// waiting for the lock, when the slot is decided. It must hand the slot on
// to the next waiter (no slot leaks) and report canceled, not admitted (no
// slot is held by a caller that is gone).
func TestCanceledAtHandover(t *testing.T) {
	th, _ := newThrottle(t, Config{MaxInFlight: 1, Queue: Queue{MaxLength: 5}})
	slot := hold(t, th, 1, Request{})[0]
	gone := acquire(t, th, "gone", Request{Priority: High})
	next := acquire(t, th, "next", Request{})
	first := true
	testHook = func(_ *Throttle, _ Priority, d Decision) {
		if !d.Admitted || !first {
			return
		}
		first = false
		gone.cancel() // the dispatcher holds the lock: gone blocks in leave
		waitFor(t, func() bool { return inLeave() })
	}
	defer func() { testHook = nil }()
	slot.Release(Outcome{})
	if d := gone.result(t); d.Admitted || d.Reason != ReasonCanceled {
		t.Fatalf("gone: %+v, want canceled", d)
	}
	d := next.result(t)
	if !d.Admitted {
		t.Fatalf("next: %+v, want the slot gone handed on", d)
	}
	d.Release(Outcome{})
	if s := th.Stats(); s.InFlight != 0 || s.QueueLength != 0 || s.Admitted != 3 {
		t.Fatalf("after: %+v", s)
	}
}

// inLeave reports whether a goroutine is in Throttle.leave.
func inLeave() bool {
	buf := make([]byte, 1<<20)
	return strings.Contains(string(buf[:runtime.Stack(buf, true)]), "throttle.(*Throttle).leave")
}
