package throttle

import (
	"context"
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/clock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// epoch is where every fake clock starts.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// newThrottle returns a Throttle on a fake clock, failing the test on a
// config error.
func newThrottle(t *testing.T, cfg Config) (*Throttle, *clock.Fake) {
	t.Helper()
	clk := clock.NewFake(epoch)
	cfg.Clock = clk
	th, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return th, clk
}

// pending is an Acquire running in its own goroutine.
type pending struct {
	name   string
	cancel context.CancelFunc
	done   chan Decision
}

// acquire starts an Acquire for r and, when it is expected to queue, waits
// until the queue has grown by one, so that arrivals keep the order the
// test gives them.
func acquire(t *testing.T, th *Throttle, name string, r Request) *pending {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &pending{name: name, cancel: cancel, done: make(chan Decision, 1)}
	before := th.Stats().Queued
	go func() { p.done <- th.Acquire(ctx, r) }()
	waitFor(t, func() bool { return th.Stats().Queued > before || len(p.done) > 0 })
	return p
}

// result waits for p's decision.
func (p *pending) result(t *testing.T) Decision {
	t.Helper()
	select {
	case d := <-p.done:
		p.cancel()
		return d
	case <-time.After(10 * time.Second): // an upper bound, not a timing
		t.Fatalf("%s: no decision", p.name)
	}
	return Decision{}
}

// decided reports whether p has its decision (without taking it).
func (p *pending) decided() bool { return len(p.done) > 0 }

// waitFor polls cond until it holds, failing after a generous bound.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		runtime.Gosched()
	}
}

// hold acquires n slots at once (the service must have room) and returns
// them.
func hold(t *testing.T, th *Throttle, n int, r Request) []Decision {
	t.Helper()
	out := make([]Decision, n)
	for i := range out {
		out[i] = th.Acquire(context.Background(), r)
		if !out[i].Admitted {
			t.Fatalf("hold %d: refused (%v)", i, out[i].Reason)
		}
	}
	return out
}
