package throttle

import (
	"context"
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
