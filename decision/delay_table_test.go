package decision_test

import (
	"context"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// The delay tables: a rule with a delay holds a request for its turn on
// the Engine's clock, refuses it once the hold would exceed the delay,
// and gives a held request's reservation back when its caller leaves
// (store.Canceler). httplimit/delay_test.go checks the same through
// net/http.

// tickClock is a fake clock that tells, on made, the interval of every
// ticker made: a held request makes one, so a table knows it waits.
type tickClock struct {
	*clock.Fake
	made chan time.Duration
}

func (c *tickClock) NewTicker(d time.Duration) clock.Ticker {
	t := c.Fake.NewTicker(d)
	c.made <- d
	return t
}

// delayRig is a rig whose Engine holds on a tickClock, over rules.
func delayRig(t *testing.T, rules ...policy.Rule) (*rig, *tickClock) {
	t.Helper()
	var tc *tickClock
	r := newRig(t, policy.Policy{Rules: rules}, func(o *decision.Options) {
		tc = &tickClock{Fake: r0(o), made: make(chan time.Duration, 16)}
		o.Clock = tc
	})
	return r, tc
}

// queueRule is a leaky bucket of 10 a second, burst 1, that may hold a
// request 300ms: 3 in the queue behind the one the bucket has room for.
func queueRule() policy.Rule {
	return policy.Rule{Name: "queue", Key: policy.KeySpec{Kind: policy.KeyIP}, Algorithm: limiter.LeakyBucket,
		Rate: rate(10, time.Second), Burst: 1, Delay: 300 * time.Millisecond}
}

// start decides c under ctx in its own goroutine and finishes it as do
// does; the seen values arrive on the channel once it is decided.
func (r *rig) start(ctx context.Context, c call) chan seen {
	out := make(chan seen, 1)
	go func() {
		v := r.e.Decide(ctx, r.set, c.request())
		s := look(r.t, v)
		var resp *decision.Response
		if v.Pass {
			resp = &decision.Response{Passed: true, Status: 200}
		}
		v.Finish(resp)
		out <- s
	}()
	return out
}

func waitSeen(t *testing.T, ch chan seen, what string) seen {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(10 * time.Second): // an upper bound only
		t.Fatalf("%s: not decided", what)
		return seen{}
	}
}

func waitHeld(t *testing.T, tc *tickClock, want time.Duration) {
	t.Helper()
	select {
	case got := <-tc.made:
		if got != want {
			t.Fatalf("held for %v, want %v", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("not held (want %v)", want)
	}
}

// TestDelayTable: the first request takes the bucket's room; the next
// waits 100ms for its turn and passes, reported delayed and held 100ms;
// three more queue (100, 200, 300ms) and the fourth would wait 400ms,
// over the delay: 429, Retry-After 1 (100ms until it could queue).
func TestDelayTable(t *testing.T) {
	r, tc := delayRig(t, queueRule())
	bg := context.Background()
	want(t, r.do(call{}), 0, "first")
	ch := r.start(bg, call{})
	waitHeld(t, tc, 100*time.Millisecond)
	r.clock.Advance(100 * time.Millisecond)
	s := waitSeen(t, ch, "held")
	want(t, s, 0, "the held request")
	if s.rep.Held != 100*time.Millisecond || s.rule(t, "queue").Outcome != decision.Delayed {
		t.Errorf("held %v, outcome %v; want 100ms, delayed", s.rep.Held, s.rule(t, "queue").Outcome)
	}
	if got := s.fields["Ratelimit"]; got != `"queue";r=0;t=1` {
		t.Errorf("RateLimit %q, want r=0;t=1", got)
	}
	var queued []chan seen
	for i := range 3 {
		queued = append(queued, r.start(bg, call{}))
		waitHeld(t, tc, time.Duration(i+1)*100*time.Millisecond)
	}
	s = r.do(call{})
	want(t, s, 429, "beyond the delay")
	if s.fields["Retry-After"] != "1" || s.rule(t, "queue").Outcome != decision.Limited {
		t.Errorf("Retry-After %q, outcome %v; want 1, limited", s.fields["Retry-After"], s.rule(t, "queue").Outcome)
	}
	r.clock.Advance(300 * time.Millisecond)
	for i, ch := range queued {
		want(t, waitSeen(t, ch, "queued"), 0, "queued "+string(rune('1'+i)))
	}
}

// TestDelayCallerLeavesTable: a caller that leaves while held is let go
// at once (StatusClientGone, not passed) and its reservation given back
// when it is the last: the next request gets the same turn, 100ms. One
// that leaves with another queued behind it leaves its turn unused.
func TestDelayCallerLeavesTable(t *testing.T) {
	r, tc := delayRig(t, queueRule())
	bg := context.Background()
	want(t, r.do(call{}), 0, "first")

	ctx, cancel := context.WithCancel(bg)
	ch := r.start(ctx, call{})
	waitHeld(t, tc, 100*time.Millisecond)
	cancel()
	s := waitSeen(t, ch, "left")
	if s.pass || s.rep.Status != decision.StatusClientGone {
		t.Errorf("a caller that left: pass %v status %d, want not passed, %d", s.pass, s.rep.Status, decision.StatusClientGone)
	}
	ctx, cancel = context.WithCancel(bg)
	first := r.start(ctx, call{})
	waitHeld(t, tc, 100*time.Millisecond) // the turn given back: the same turn
	second := r.start(bg, call{})
	waitHeld(t, tc, 200*time.Millisecond)
	cancel() // not the last reservation: its turn goes unused
	waitSeen(t, first, "left, not last")
	third := r.start(bg, call{})
	waitHeld(t, tc, 300*time.Millisecond)
	r.clock.Advance(300 * time.Millisecond)
	want(t, waitSeen(t, second, "second"), 0, "second")
	want(t, waitSeen(t, third, "third"), 0, "third")
}

// TestDelayWithAnotherRuleTable: a request under the delay rule and a
// window rule is held and spends both; once the queue is full it is
// refused and the window rule spends nothing (4 spent: 96 left).
func TestDelayWithAnotherRuleTable(t *testing.T) {
	for name, st := range stores {
		t.Run(name, func(t *testing.T) {
			var tc *tickClock
			r := newRig(t, policy.Policy{Rules: []policy.Rule{queueRule(),
				{Name: "window", Key: policy.KeySpec{Kind: policy.KeyIP}, Rate: rate(100, time.Minute)}}},
				st, func(o *decision.Options) {
					tc = &tickClock{Fake: r0(o), made: make(chan time.Duration, 16)}
					o.Clock = tc
				})
			bg := context.Background()
			want(t, r.do(call{}), 0, "first")
			var queued []chan seen
			for i := range 3 {
				queued = append(queued, r.start(bg, call{}))
				waitHeld(t, tc, time.Duration(i+1)*100*time.Millisecond)
			}
			s := r.do(call{})
			want(t, s, 429, "queue full")
			if o := s.outcomes(); o["queue"] != decision.Limited || o["window"] != decision.NotSpent {
				t.Errorf("outcomes %v, want queue limited, window not_spent", o)
			}
			if got := remaining(t, s, "window"); got != 96 {
				t.Errorf("window remaining %d, want 96 (4 spent): %q", got, s.fields["Ratelimit"])
			}
			r.clock.Advance(300 * time.Millisecond)
			for _, ch := range queued {
				want(t, waitSeen(t, ch, "queued"), 0, "queued")
			}
		})
	}
}

// r0 is the fake clock a rig gave its Options.
func r0(o *decision.Options) *clock.Fake { return o.Clock.(*clock.Fake) }

// TestDelayShadowHoldsNothingTable: a shadow rule with a delay reports a
// request delayed but never holds it.
func TestDelayShadowHoldsNothingTable(t *testing.T) {
	r, tc := delayRig(t, policy.Rule{Name: "queue", Key: policy.KeySpec{Kind: policy.KeyIP}, Algorithm: limiter.GCRA,
		Rate: rate(10, time.Second), Burst: 1, Delay: time.Second, Mode: policy.Shadow})
	var got []decision.Outcome
	for range 3 {
		s := r.do(call{})
		want(t, s, 0, "a shadow rule's request")
		got = append(got, s.rule(t, "queue").Outcome)
	}
	if len(tc.made) != 0 {
		t.Errorf("a shadow rule held a request (%d tickers made)", len(tc.made))
	}
	if got[0] != decision.Allowed || got[1] != decision.Delayed || got[2] != decision.Delayed {
		t.Errorf("outcomes %v, want allowed, delayed, delayed", got)
	}
}
