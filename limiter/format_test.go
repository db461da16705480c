package limiter_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// TestDecisionString: %v and %+v of a Decision name allowed, limit,
// remaining, retry-after and reset (and a delay when there is one), never
// the store's bookkeeping (Refill, Reservation).
func TestDecisionString(t *testing.T) {
	for _, tc := range []struct {
		d    limiter.Decision
		want string
	}{
		{limiter.Decision{Allowed: true, Limit: 20, Remaining: 19, Reset: 3 * time.Second, Refill: time.Second,
			Reservation: limiter.Reservation{At: 1, Level: 2}},
			"allowed limit=20 remaining=19 retry-after=0s reset=3s"},
		{limiter.Decision{Allowed: true, Limit: 1, Delay: 50 * time.Millisecond, Reset: 100 * time.Millisecond},
			"allowed limit=1 remaining=0 retry-after=0s reset=100ms delay=50ms"},
		{limiter.Decision{Limit: 20, RetryAfter: 1500 * time.Millisecond, Reset: 30 * time.Second},
			"denied limit=20 remaining=0 retry-after=1.5s reset=30s"},
		{limiter.Decision{RetryAfter: limiter.Never}, "denied limit=0 remaining=0 retry-after=never reset=0s"},
	} {
		for _, verb := range []string{"%v", "%+v", "%s"} {
			if got := fmt.Sprintf(verb, tc.d); got != tc.want {
				t.Errorf("%s of %#v:\n got %s\nwant %s", verb, tc.d, got, tc.want)
			}
		}
	}
}
