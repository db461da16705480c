package throttle

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// An upstream 503 with Retry-After: 5s holds every non-critical request for
// 5s, refused at once with the time that remains; critical requests pass.
func TestBackoffUpstream503(t *testing.T) {
	th, clk := newThrottle(t, Config{MaxInFlight: 4, UpstreamBackoff: true})
	d := th.Acquire(context.Background(), Request{})
	d.Release(Outcome{Status: 503, RetryAfter: 5 * time.Second})
	for i, s := range []struct {
		advance time.Duration
		p       Priority
		want    Reason
		left    time.Duration
	}{
		{0, Normal, ReasonUpstreamBackoff, 5 * time.Second},
		{2 * time.Second, High, ReasonUpstreamBackoff, 3 * time.Second},
		{0, Low, ReasonUpstreamBackoff, 3 * time.Second},
		{0, Critical, ReasonNone, 0},
		{2999 * time.Millisecond, Normal, ReasonUpstreamBackoff, time.Millisecond},
		{time.Millisecond, Normal, ReasonNone, 0}, // 5s have passed
	} {
		clk.Advance(s.advance)
		d := th.Acquire(context.Background(), Request{Priority: s.p})
		if d.Reason != s.want || d.Admitted && s.want != ReasonNone || !d.Admitted && d.RetryAfter != s.left {
			t.Fatalf("step %d (%v): %+v, want %v with %v left", i, s.p, d, s.want, s.left)
		}
		d.Release(Outcome{})
	}
}

// The hold reaches the queue at once: non-critical waiters are refused,
// critical ones keep their place and get the slot.
func TestBackoffEmptiesQueue(t *testing.T) {
	th, _ := newThrottle(t, Config{MaxInFlight: 1, UpstreamBackoff: true, Queue: Queue{MaxLength: 5}})
	slot := hold(t, th, 1, Request{Priority: Critical})[0]
	n := acquire(t, th, "n", Request{Priority: High, Client: "a"})
	c := acquire(t, th, "c", Request{Priority: Critical, Client: "b"})
	slot.Release(Outcome{Status: 503, RetryAfter: 2 * time.Second})
	if d := n.result(t); d.Reason != ReasonUpstreamBackoff || d.RetryAfter != 2*time.Second {
		t.Fatalf("queued high: %+v", d)
	}
	d := c.result(t)
	if !d.Admitted {
		t.Fatalf("queued critical: %+v", d)
	}
	d.Release(Outcome{})
	if s := th.Stats(); s.UpstreamHold != 2*time.Second || s.Refused(High, ReasonUpstreamBackoff) != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// An upstream 429 with Retry-After holds that caller only, critical
// requests too, and its waiters leave the queue.
func TestBackoffUpstream429HoldsOneCaller(t *testing.T) {
	th, clk := newThrottle(t, Config{MaxInFlight: 1, UpstreamBackoff: true, Queue: Queue{MaxLength: 5}})
	slot := hold(t, th, 1, Request{Client: "a"})[0]
	wa := acquire(t, th, "wa", Request{Client: "a"})
	wb := acquire(t, th, "wb", Request{Client: "b"})
	slot.Release(Outcome{Status: 429, RetryAfter: 10 * time.Second})
	if d := wa.result(t); d.Reason != ReasonUpstreamBackoff || d.RetryAfter != 10*time.Second {
		t.Fatalf("a's waiter: %+v", d)
	}
	d := wb.result(t)
	if !d.Admitted {
		t.Fatalf("b's waiter: %+v", d)
	}
	d.Release(Outcome{})
	if d := th.Acquire(context.Background(), Request{Client: "a", Priority: Critical}); d.Reason != ReasonUpstreamBackoff {
		t.Fatalf("a, critical: %+v", d)
	}
	clk.Advance(10 * time.Second)
	d = th.Acquire(context.Background(), Request{Client: "a"})
	if !d.Admitted {
		t.Fatalf("a after 10s: %+v", d)
	}
	d.Release(Outcome{Status: 429, RetryAfter: time.Second, Latency: time.Millisecond})
	if s := th.Stats(); s.HeldClients != 1 || s.UpstreamHold != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// Retry-After is obeyed only when asked, only on 503 and 429, and at most
// MaxBackoff; an anonymous caller's 429 holds no one.
func TestBackoffLimits(t *testing.T) {
	for _, c := range []struct {
		name string
		cfg  Config
		o    Outcome
		r    Request // asked right after
		left time.Duration
	}{
		{"off", Config{}, Outcome{Status: 503, RetryAfter: time.Second}, Request{}, 0},
		{"capped", Config{UpstreamBackoff: true, MaxBackoff: 30 * time.Second}, Outcome{Status: 503, RetryAfter: time.Hour}, Request{}, 30 * time.Second},
		{"default cap", Config{UpstreamBackoff: true}, Outcome{Status: 503, RetryAfter: time.Hour}, Request{}, time.Minute},
		{"500 is not a pause", Config{UpstreamBackoff: true}, Outcome{Status: 500, RetryAfter: time.Second}, Request{}, 0},
		{"503 without Retry-After", Config{UpstreamBackoff: true}, Outcome{Status: 503}, Request{}, 0},
		{"anonymous 429", Config{UpstreamBackoff: true}, Outcome{Status: 429, RetryAfter: time.Second}, Request{}, 0},
	} {
		c.cfg.MaxInFlight = 2
		th, _ := newThrottle(t, c.cfg)
		d := th.Acquire(context.Background(), Request{})
		d.Release(c.o)
		d = th.Acquire(context.Background(), c.r)
		if c.left == 0 && !d.Admitted || c.left > 0 && (d.Reason != ReasonUpstreamBackoff || d.RetryAfter != c.left) {
			t.Errorf("%s: %+v, want %v held", c.name, d, c.left)
		}
		d.Release(Outcome{})
	}
}

// At most maxClientHolds callers are held at once; expired holds make room.
func TestBackoffClientHoldsBounded(t *testing.T) {
	th, clk := newThrottle(t, Config{MaxInFlight: 1, UpstreamBackoff: true})
	for i := range maxClientHolds + 1 {
		d := th.Acquire(context.Background(), Request{Client: fmt.Sprint(i)})
		d.Release(Outcome{Status: 429, RetryAfter: time.Second})
	}
	if s := th.Stats(); s.HeldClients != maxClientHolds {
		t.Fatalf("%d callers held, want %d", s.HeldClients, maxClientHolds)
	}
	if d := th.Acquire(context.Background(), Request{Client: fmt.Sprint(maxClientHolds)}); !d.Admitted {
		t.Fatalf("the caller over the bound is held: %+v", d)
	} else {
		clk.Advance(time.Second)
		d.Release(Outcome{Status: 429, RetryAfter: time.Second}) // the expired make room
	}
	if s := th.Stats(); s.HeldClients != 1 {
		t.Fatalf("%d callers held after the sweep, want 1", s.HeldClients)
	}
}
