package store

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestFailurePolicyRefused: how every front answers a store's error under
// each policy: an *UnavailableError (wrapped or not) is refused whatever
// the policy says; another error by the policy; no error never.
func TestFailurePolicyRefused(t *testing.T) {
	down := errors.New("down")
	asked := &UnavailableError{RetryAfter: 2 * time.Second, Err: down}
	for _, c := range []struct {
		p       FailurePolicy
		err     error
		refused bool
		asked   bool
	}{
		{FailOpen, nil, false, false}, {FailClosed, nil, false, false}, {FailLocal, nil, false, false},
		{FailOpen, down, false, false}, {FailClosed, down, true, false}, {FailLocal, down, true, false},
		{FailOpen, asked, true, true}, {FailClosed, fmt.Errorf("eval: %w", asked), true, true},
	} {
		refused, u := c.p.Refused(c.err)
		if refused != c.refused || (u != nil) != c.asked || (c.asked && u.RetryAfter != 2*time.Second) {
			t.Errorf("%v.Refused(%v) = %v, %v; want %v, asked %v", c.p, c.err, refused, u, c.refused, c.asked)
		}
	}
}

// TestFailurePolicyUnavailable: what a store applying the policy itself
// returns: the cause under FailOpen, an *UnavailableError otherwise.
func TestFailurePolicyUnavailable(t *testing.T) {
	down := errors.New("down")
	if err := FailOpen.Unavailable(down, time.Second); err != down {
		t.Errorf("FailOpen: %v, want the cause", err)
	}
	for _, p := range []FailurePolicy{FailClosed, FailLocal} {
		var u *UnavailableError
		if err := p.Unavailable(down, 3*time.Second); !errors.As(err, &u) || u.RetryAfter != 3*time.Second || !errors.Is(err, down) {
			t.Errorf("%v: %v, want *UnavailableError of 3s wrapping the cause", p, err)
		}
	}
}
