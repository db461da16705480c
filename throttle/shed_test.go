package throttle

import (
	"context"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Early shedding on a limit of 10 with shed_from 0.8: the line is 8 in
// flight. Low is refused there with probability (in-8+1)/(10-8+1): 1/3 at
// 8, 2/3 at 9, all at 10 (and never queued); degrade is refused from 8 on;
// normal and above are never shed early.
func TestShedEarly(t *testing.T) {
	var roll float64
	th, _ := newThrottle(t, Config{MaxInFlight: 10, ShedFrom: 0.8, Queue: Queue{MaxLength: 10}, Rand: func() float64 { return roll }})
	var held []Decision
	defer func() {
		for i := range held {
			held[i].Release(Outcome{})
		}
	}()
	for i, s := range []struct {
		inFlight int // slots held before the request
		req      Request
		roll     float64
		want     Reason
	}{
		{7, Request{Priority: Low}, 0, ReasonNone},                            // below the line: admitted (8 now)
		{8, Request{Priority: Low}, 0.33, ReasonShed},                         // 0.33 < 1/3
		{8, Request{Priority: Low}, 0.34, ReasonNone},                         // 0.34 ≥ 1/3: admitted (9)
		{9, Request{Priority: Low}, 0.66, ReasonShed},                         // 0.66 < 2/3
		{9, Request{Degrade: true, Priority: Critical}, 0.99, ReasonDegraded}, // degrade from the line on
		{9, Request{Priority: Normal}, 0, ReasonNone},                         // normal is never shed early (10)
		{10, Request{Priority: Low}, 0.999, ReasonShed},                       // at the limit, every low
		{10, Request{Priority: Low, Degrade: true}, 0.999, ReasonDegraded},
	} {
		for len(held) < s.inFlight {
			held = append(held, th.Acquire(context.Background(), Request{Priority: Critical}))
		}
		roll = s.roll
		d := th.Acquire(context.Background(), s.req)
		if d.Reason != s.want || d.Admitted != (s.want == ReasonNone) {
			t.Fatalf("step %d (%d in flight, %+v, roll %v): %+v, want %v", i, s.inFlight, s.req, s.roll, d, s.want)
		}
		if d.Admitted {
			held = append(held, d)
		} else if d.RetryAfter <= 0 {
			t.Fatalf("step %d: refusal without a Retry-After", i)
		}
	}
	s := th.Stats()
	if s.QueueLength != 0 || s.Refused(Low, ReasonShed) != 3 || s.Refused(Critical, ReasonDegraded) != 1 || s.Refused(Low, ReasonDegraded) != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// shed_from 1: low is refused only at the limit.
func TestShedFromOne(t *testing.T) {
	th, _ := newThrottle(t, Config{MaxInFlight: 2, ShedFrom: 1, Rand: func() float64 { return 0 }})
	held := hold(t, th, 2, Request{Priority: Low})
	if d := th.Acquire(context.Background(), Request{Priority: Low}); d.Reason != ReasonShed {
		t.Fatalf("at the limit: %+v", d)
	}
	for i := range held {
		held[i].Release(Outcome{})
	}
}

// checkDecision is the testHook of TestInvariantPriorityUnderLoad: it
// counts decisions that refuse a request for overload while a lower
// priority waits, admit one while a higher priority waits, or admit one
// over the limit or the ceiling.
func checkDecision(violations *atomic.Int64) func(*Throttle, Priority, Decision) {
	return func(th *Throttle, p Priority, d Decision) {
		lower, higher := 0, 0
		for i := range numPriorities {
			switch {
			case i < p.index():
				lower += th.queue.levels[i].n
			case i > p.index():
				higher += th.queue.levels[i].n
			}
		}
		over := th.inFlight >= th.limit || th.limit > th.cfg.MaxInFlight
		if d.Reason.Overload() && lower > 0 || d.Admitted && (higher > 0 || over) {
			violations.Add(1)
		}
	}
}

// The invariant under mixed concurrent load, with the adaptive limit moving
// and the upstream asking for pauses: no request is refused for overload
// while one of lower priority waits, none is admitted while a higher
// priority waits, and none beyond the limit.
func TestInvariantPriorityUnderLoad(t *testing.T) {
	queue := Queue{MaxLength: 6, MaxWait: 40 * time.Millisecond}
	t.Run("priorities", func(t *testing.T) {
		runLoad(t, Config{MaxInFlight: 4, ShedFrom: 0.5, Queue: queue}, false)
	})
	t.Run("adaptive and backoff", func(t *testing.T) {
		runLoad(t, Config{
			MaxInFlight: 6, ShedFrom: 0.5, UpstreamBackoff: true, Queue: Queue{MaxLength: 6, MaxWait: 200 * time.Millisecond},
			Adaptive: &Adaptive{MinInFlight: 2, LatencyTarget: 60 * time.Millisecond, Window: 50 * time.Millisecond, MinSamples: 5},
		}, true)
	})
}

// runLoad sends 16 callers' 150 requests each through a Throttle with cfg,
// checking every decision with checkDecision; pauses adds upstream 503s and
// 429s with Retry-After to the outcomes.
func runLoad(t *testing.T, cfg Config, pauses bool) {
	var violations atomic.Int64
	testHook = checkDecision(&violations)
	defer func() { testHook = nil }()
	cfg.Rand = rand.New(rand.NewPCG(1, 2)).Float64 // called under the Throttle's lock
	th, clk := newThrottle(t, cfg)
	var reasons [numReasons]atomic.Int64
	var wg sync.WaitGroup
	for c := range 16 {
		wg.Go(func() {
			for i := range 150 {
				d := loadRequest(th, c, i)
				reasons[d.Reason].Add(1)
				if !d.Admitted {
					clk.Advance(100 * time.Microsecond) // time passes for the refused too
				} else {
					for range 20 { // the service takes a while
						runtime.Gosched()
					}
					clk.Advance(5 * time.Millisecond)
					d.Release(loadOutcome(i, pauses))
				}
			}
		})
	}
	wg.Wait()
	if n := violations.Load(); n > 0 {
		t.Fatalf("%d decisions broke the invariant", n)
	}
	for r := range numReasons {
		t.Logf("%-16v %d", r, reasons[r].Load())
	}
	overload := reasons[ReasonShed].Load() + reasons[ReasonQueueFull].Load() + reasons[ReasonWaitTooLong].Load()
	if reasons[ReasonNone].Load() == 0 || overload == 0 {
		t.Fatalf("the load did not exercise both sides: admitted %d, overload refusals %d", reasons[ReasonNone].Load(), overload)
	}
	if s := th.Stats(); s.InFlight != 0 || s.QueueLength != 0 {
		t.Fatalf("after the load: %+v", s)
	}
}

// loadRequest is caller c's i-th request: every priority, some callers
// gone before they ask, some requests non-essential.
func loadRequest(th *Throttle, c, i int) Decision {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if (c+i)%23 == 0 {
		cancel()
	}
	r := Request{Priority: Priority(c%4) - 1, Client: string(rune('a' + c%6)), Degrade: i%17 == 0}
	return th.Acquire(ctx, r)
}

// loadOutcome varies the upstream: latencies around the target and, with
// pauses, some 503s and 429s asking for a pause.
func loadOutcome(i int, pauses bool) Outcome {
	switch {
	case pauses && i%53 == 52:
		return Outcome{Status: 503, RetryAfter: 10 * time.Millisecond}
	case pauses && i%13 == 12:
		return Outcome{Status: 429, RetryAfter: 20 * time.Millisecond}
	}
	return Outcome{Status: 200, Latency: time.Duration(i%4) * 20 * time.Millisecond}
}
