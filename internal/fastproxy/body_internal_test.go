package fastproxy

import (
	"os"
	"testing"
	"time"
)

// timeoutReader fails every read with a deadline error, as a connection
// whose read deadline has passed does.
type timeoutReader struct{}

func (timeoutReader) Read([]byte) (int, error) { return 0, os.ErrDeadlineExceeded }

// TestBodyBlameAtTheDeadline: a body timeout is the upstream's when the
// read that failed began after the deadline (sluice was sending the body
// on, not waiting for the caller), whatever sluice had waited for the
// caller before; it is the caller's when that read began before the
// deadline and sluice had waited for the caller most of the time. The
// times are set, not slept.
func TestBodyBlameAtTheDeadline(t *testing.T) {
	now := time.Now()
	for _, c := range []struct {
		name     string
		deadline time.Time // from the read's start
		waited   time.Duration
		slow     bool
	}{
		{"read begun after the deadline, caller waited for most of the time", now.Add(-time.Millisecond), 900 * time.Millisecond, true},
		{"read begun before the deadline, caller waited for most of the time", now.Add(time.Hour), 900 * time.Millisecond, false},
		{"read begun before the deadline, caller waited for little of it", now.Add(time.Hour), 100 * time.Millisecond, true},
		{"no deadline known, caller waited for most of the time", time.Time{}, 900 * time.Millisecond, false},
	} {
		b := &Body{src: timeoutReader{}, start: now.Add(-time.Second), deadline: c.deadline, want: 100, waited: c.waited}
		if _, err := b.Read(make([]byte, 10)); !isTimeout(err) {
			t.Fatalf("%s: read %v, want a timeout", c.name, err)
		}
		if b.waited < c.waited { // Read adds its own, which is all but nothing here
			t.Fatalf("%s: waited %v", c.name, b.waited)
		}
		if got := b.upstreamSlow(); got != c.slow {
			t.Errorf("%s: upstream's fault %v, want %v", c.name, got, c.slow)
		}
	}
}
