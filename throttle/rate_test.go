package throttle

import (
	"testing"
	"time"
)

// The completion rate, step by step: the previous period weighs by how much
// of it lies within the last second; with nothing counted, one per time
// since the last completion, at least a second.
func TestCompletionsWait(t *testing.T) {
	var c completions
	if _, ok := c.wait(epoch, 1); ok {
		t.Fatal("a rate before the first completion")
	}
	at := func(ms int) time.Time { return epoch.Add(time.Duration(ms) * time.Millisecond) }
	for i, s := range []struct {
		add  []int // completions at these times (ms) first
		now  int
		n    int
		want time.Duration
	}{
		{[]int{0, 100, 200, 300}, 300, 1, 250 * time.Millisecond}, // 4 this period: 4/s
		{nil, 300, 3, 750 * time.Millisecond},
		{nil, 1000, 1, 250 * time.Millisecond},                  // previous 4 at weight 1
		{nil, 1500, 1, 500 * time.Millisecond},                  // previous 4 at weight 0.5: 2/s
		{[]int{1500, 1600}, 1750, 1, time.Second / 3},           // 4*0.25 + 2 = 3/s
		{nil, 2000, 1, 500 * time.Millisecond},                  // previous 2 at weight 1
		{nil, 3100, 1, 1500 * time.Millisecond},                 // two periods empty: 1.5s since the last
		{nil, 9600, 2, 16 * time.Second},                        // 8s since the last, per slot
		{nil, -5000, 1, time.Second},                            // the clock went back: at least a second
		{[]int{-5000, -4900}, -4800, 1, 500 * time.Millisecond}, // and counts again from there
	} {
		for _, ms := range s.add {
			c.add(at(ms))
		}
		got, ok := c.wait(at(s.now), s.n)
		if !ok || got != s.want {
			t.Errorf("step %d at %dms: wait for %d = %v (%v), want %v", i, s.now, s.n, got, ok, s.want)
		}
	}
}

// A long stall times a long queue is a day at most, never an overflowed
// (negative) Duration that would let the request queue.
func TestCompletionsWaitBounded(t *testing.T) {
	var c completions
	c.add(epoch)
	if got, _ := c.wait(epoch.Add(time.Hour), 1<<40); got != maxEstimate {
		t.Fatalf("wait = %v, want %v", got, maxEstimate)
	}
}
