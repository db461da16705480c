package throttle

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
)

// lateClock is a fake clock whose next reading, once armed, is taken and
// then held back: if the Throttle's lock is free at that moment, the
// reading waits (outside the lock) until the test lets it go, as a caller
// descheduled between reading the clock and taking the lock would.
type lateClock struct {
	*clock.Fake
	th      *Throttle
	armed   atomic.Bool
	read    chan struct{}
	proceed chan struct{}
}

func (c *lateClock) Now() time.Time {
	now := c.Fake.Now()
	if !c.armed.Swap(false) {
		return now
	}
	if c.th.mu.TryLock() { // read outside the lock: let others go first
		c.th.mu.Unlock()
		c.read <- struct{}{}
		<-c.proceed
		return now
	}
	c.read <- struct{}{}
	return now
}

// Times are read under the Throttle's lock, so that what it records is in
// order: a caller whose clock reading is overtaken by a later completion
// must not make the completion rate look as if the clock went back (which
// forgets every completion counted, and then refuses waiters as if the
// upstream had stalled).
func TestClockReadUnderLock(t *testing.T) {
	clk := &lateClock{Fake: clock.NewFake(epoch), read: make(chan struct{}, 1), proceed: make(chan struct{})}
	th, err := New(Config{MaxInFlight: 2, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	clk.th = th
	for _, d := range hold(t, th, 2, Request{}) {
		d.Release(Outcome{}) // 2 completions in the period from epoch
	}
	clk.Advance(999 * time.Millisecond)
	slots := hold(t, th, 2, Request{})
	clk.armed.Store(true)
	late := make(chan Decision, 1)
	go func() { late <- th.Acquire(context.Background(), Request{}) }() // reads +999ms
	<-clk.read
	clk.Advance(2 * time.Millisecond)
	slots[0].Release(Outcome{}) // +1001ms: a new period; the previous counted 2
	slots[0] = th.Acquire(context.Background(), Request{})
	close(clk.proceed)
	if d := <-late; d.Admitted {
		t.Fatalf("late caller: %+v", d)
	}
	// 2 completions in the previous period at weight 0.999 and 1 in this
	// one: about 3/s, a third of a second per slot.
	d := th.Acquire(context.Background(), Request{})
	if d.Reason != ReasonQueueFull || d.RetryAfter > 400*time.Millisecond {
		t.Fatalf("%+v, want queue_full with a Retry-After of about 333ms", d)
	}
	for _, s := range slots {
		s.Release(Outcome{})
	}
}
