package throttle

import (
	"context"
	"testing"
	"time"
)

// A reload lowers the ceiling under load: the requests in flight count
// against the new one, so the upstream never sees more than the old
// ceiling and, once they finish, no more than the new.
func TestUpdateKeepsInFlight(t *testing.T) {
	th, _ := newThrottle(t, Config{MaxInFlight: 4, Queue: Queue{MaxLength: 3}})
	held := hold(t, th, 4, Request{})
	w1 := acquire(t, th, "w1", Request{Priority: High})
	w2 := acquire(t, th, "w2", Request{})
	w3 := acquire(t, th, "w3", Request{})
	if err := th.Update(Config{MaxInFlight: 2, Queue: Queue{MaxLength: 2}}); err != nil {
		t.Fatal(err)
	}
	if d := w3.result(t); d.Reason != ReasonQueueFull { // the shorter queue's surplus: newest normal
		t.Fatalf("w3: %+v", d)
	}
	held[0].Release(Outcome{})
	held[1].Release(Outcome{})
	held[2].Release(Outcome{}) // 1 in flight now, limit 2: w1 gets a slot
	d1 := w1.result(t)
	if !d1.Admitted || w2.decided() {
		t.Fatalf("w1 %+v, w2 decided %v", d1, w2.decided())
	}
	if s := th.Stats(); s.InFlight != 2 || s.Limit != 2 || s.MaxInFlight != 2 || s.QueueLength != 1 {
		t.Fatalf("stats %+v", s)
	}
	if err := th.Update(Config{MaxInFlight: 3, Queue: Queue{MaxLength: 2}}); err != nil {
		t.Fatal(err)
	}
	d2 := w2.result(t) // the higher ceiling hands w2 a slot at once
	if !d2.Admitted {
		t.Fatalf("w2 %+v", d2)
	}
	for _, d := range []*Decision{&held[3], &d1, &d2} {
		d.Release(Outcome{})
	}
	if s := th.Stats(); s.InFlight != 0 || s.QueueLength != 0 {
		t.Fatalf("stats %+v", s)
	}
}

// The adaptive limit survives a reload within the new bounds; a bad config
// changes nothing.
func TestUpdateAdaptive(t *testing.T) {
	h := adaptiveThrottle(t, 5, 100)
	h.window(Outcome{Latency: 2 * target}) // 50
	if err := h.th.Update(Config{MaxInFlight: 40, Adaptive: &Adaptive{MinInFlight: 5, LatencyTarget: target, MinSamples: 1}}); err != nil {
		t.Fatal(err)
	}
	if l := h.th.Limit(); l != 40 {
		t.Fatalf("limit %d after a ceiling of 40, want 40", l)
	}
	h.window(Outcome{Latency: 2 * target}) // 20
	if err := h.th.Update(Config{MaxInFlight: 40, Adaptive: &Adaptive{MinInFlight: 0}}); err == nil {
		t.Fatal("a bad config accepted")
	}
	if err := h.th.Update(Config{MaxInFlight: 40, Adaptive: &Adaptive{MinInFlight: 30, LatencyTarget: target}}); err != nil {
		t.Fatal(err)
	}
	if l := h.th.Limit(); l != 30 {
		t.Fatalf("limit %d after a floor of 30, want 30", l)
	}
	if err := h.th.Update(Config{MaxInFlight: 40}); err != nil {
		t.Fatal(err)
	}
	if l := h.th.Limit(); l != 40 {
		t.Fatalf("limit %d without adaptive, want the ceiling 40", l)
	}
	d := h.th.Acquire(context.Background(), Request{})
	h.clk.Advance(time.Second)
	d.Release(Outcome{Latency: 10 * target})
	if l := h.th.Limit(); l != 40 {
		t.Fatalf("limit %d moved without adaptive", l)
	}
}
