package clock

import (
	"testing"
	"time"
)

func TestRealFollowsTimeNow(t *testing.T) {
	var c Real
	for range 1000 {
		before := time.Now()
		got := c.Now()
		after := time.Now()
		// got is built on a reading at most a second old plus the
		// monotonic time since; it may differ from the wall clock by the
		// clock's slew over that second, far below a millisecond.
		if got.Before(before.Add(-time.Millisecond)) || got.After(after.Add(time.Millisecond)) {
			t.Fatalf("Real.Now() = %v, want between %v and %v", got, before, after)
		}
	}
}

func TestRealIsMonotonic(t *testing.T) {
	var c Real
	prev := c.Now()
	for range 10000 {
		now := c.Now()
		if now.Before(prev) {
			t.Fatalf("Real.Now() went back from %v to %v", prev, now)
		}
		prev = now
	}
}

func TestFakeTickers(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	f := NewFake(start)
	tk := f.NewTicker(time.Second)
	defer tk.Stop()
	f.Advance(500 * time.Millisecond)
	select {
	case <-tk.C():
		t.Fatal("tick before its time")
	default:
	}
	f.Advance(time.Hour) // many periods: one pending tick, like time.Ticker
	select {
	case at := <-tk.C():
		if !at.Equal(start.Add(time.Hour + 500*time.Millisecond)) {
			t.Fatalf("tick at %v", at)
		}
	default:
		t.Fatal("no tick after an hour")
	}
	select {
	case <-tk.C():
		t.Fatal("more than one pending tick")
	default:
	}
	f.Set(start) // backwards: no tick
	select {
	case <-tk.C():
		t.Fatal("tick going backwards")
	default:
	}
	if !f.Now().Equal(start) {
		t.Fatalf("Now() = %v after Set", f.Now())
	}
}
