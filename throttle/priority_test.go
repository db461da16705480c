package throttle

import (
	"strings"
	"testing"
)

func TestPrioritySpellings(t *testing.T) {
	for p := Low; p <= Critical; p++ {
		got, err := ParsePriority(p.String())
		if err != nil || got != p {
			t.Errorf("ParsePriority(%q) = %v, %v", p.String(), got, err)
		}
	}
	_, err := ParsePriority("urgent")
	if err == nil || !strings.Contains(err.Error(), `unknown priority "urgent" (accepted: critical, high, normal, low)`) {
		t.Errorf("ParsePriority(urgent): %v", err)
	}
	if Priority(7).String() != "Priority(7)" || Reason(99).String() != "Reason(99)" {
		t.Error("out-of-range String")
	}
	want := []string{"", "degraded", "shed", "queue_full", "wait_too_long", "upstream_backoff", "canceled"}
	for r := range numReasons {
		if r.String() != want[r] {
			t.Errorf("Reason(%d) = %q, want %q", r, r, want[r])
		}
	}
}

// A priority out of range counts as the nearest, never as an index out of
// range.
func TestPriorityOutOfRange(t *testing.T) {
	th, _ := newThrottle(t, Config{MaxInFlight: 1})
	held := hold(t, th, 1, Request{Priority: 100})
	d := th.Acquire(t.Context(), Request{Priority: -100})
	if d.Reason != ReasonShed { // as Low: shed at the limit
		t.Fatalf("%+v, want shed as low", d)
	}
	held[0].Release(Outcome{})
	if s := th.Stats(); s.Refused(Low, ReasonShed) != 1 || s.Refused(-100, ReasonShed) != 0 {
		t.Fatalf("stats %+v", s)
	}
}
