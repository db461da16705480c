package shutdown_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/shutdown"
)

// run runs a Sequence over the servers whose values on errc the test sends
// (one each before the context ends if it fails, one when Drain ends
// it), and records the steps in order.
type run struct {
	steps []string
	errc  chan error
}

func (r *run) sequence(delay time.Duration, drainErr, lastErr error) shutdown.Sequence {
	return shutdown.Sequence{Name: "test", Delay: delay,
		Stopping: func(byServer, delaying bool) {
			r.steps = append(r.steps, "stopping"+map[bool]string{true: " by server"}[byServer]+map[bool]string{true: " delaying"}[delaying])
		},
		Drain: func() error { r.steps = append(r.steps, "drain"); r.errc <- nil; return drainErr }, // the drain ends a server
		Last:  func() error { r.steps = append(r.steps, "last"); return lastErr },
	}
}

func TestSequence(t *testing.T) {
	boom, unclean := errors.New("boom"), errors.New("unclean")
	cases := []struct {
		name     string
		delay    time.Duration
		fail     error // sent before the context ends (nil: the context ends first)
		drain    error
		want     []string
		wantErr  error
		wantText string
	}{
		{"context, no delay", 0, nil, nil, []string{"stopping", "drain", "last"}, nil, ""},
		{"context, delay", 10 * time.Millisecond, nil, nil, []string{"stopping delaying", "drain", "last"}, nil, ""},
		{"a server failed: no delay", time.Hour, boom, nil, []string{"stopping by server", "drain", "last"}, boom, "boom"},
		{"a failure wins over an unclean drain", 0, boom, unclean, []string{"stopping by server", "drain", "last"}, boom, "boom"},
		{"an unclean drain", 0, nil, unclean, []string{"stopping", "drain", "last"}, unclean, "test: shutdown: unclean"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &run{errc: make(chan error, 2)}
			ctx, cancel := context.WithCancel(context.Background())
			if c.fail != nil {
				r.errc <- c.fail
			} else {
				cancel()
			}
			defer cancel()
			err := r.sequence(c.delay, c.drain, nil).Run(ctx, r.errc, 1+b2i(c.fail != nil))
			if !slices.Equal(r.steps, c.want) {
				t.Errorf("steps %q, want %q", r.steps, c.want)
			}
			if !errors.Is(err, c.wantErr) || (err != nil && err.Error() != c.wantText) {
				t.Errorf("Run = %v, want %v", err, c.wantText)
			}
		})
	}
}

// TestSequenceFailureEndsDelay: a server failing during the shutdown delay
// ends it, and its error is the result.
func TestSequenceFailureEndsDelay(t *testing.T) {
	boom := errors.New("boom")
	r := &run{errc: make(chan error, 2)}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := r.sequence(time.Hour, nil, nil)
	stopping := s.Stopping
	s.Stopping = func(byServer, delaying bool) { stopping(byServer, delaying); r.errc <- boom }
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx, r.errc, 2) }()
	select {
	case err := <-done:
		if !errors.Is(err, boom) || !slices.Equal(r.steps, []string{"stopping delaying", "drain", "last"}) {
			t.Errorf("Run = %v, steps %q", err, r.steps)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the failure did not end the delay")
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
