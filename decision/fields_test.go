package decision

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
)

// TestAppendRateLimit: the fields of a window rule and of a bucket rule
// (w is the empty bucket's refill time), allowed and denied, and of a
// limit of no requests an hour (w is its Period; a Period beside a limit
// is not read).
func TestAppendRateLimit(t *testing.T) {
	items := []RateLimitItem{
		{Name: "a", Limit: limiter.MustNew(limiter.FixedWindow, 10, time.Minute, 0),
			Decision: limiter.Decision{Allowed: true, Limit: 10, Remaining: 9, Refill: 40 * time.Second}},
		{Name: "b.c", Limit: limiter.MustNew(limiter.GCRA, 10, time.Minute, 5),
			Decision: limiter.Decision{Limit: 5, RetryAfter: 5500 * time.Millisecond, Refill: 6 * time.Second}, Period: time.Hour},
		{Name: "none", Period: time.Hour, Decision: limiter.Decision{RetryAfter: limiter.Never, Refill: 20 * time.Minute}},
	}
	b, split := AppendRateLimit([]byte("x"), items)
	if got, want := string(b[1:split]), `"a";q=10;w=60, "b.c";q=5;w=30, "none";q=0;w=3600`; got != want {
		t.Errorf("RateLimit-Policy %q, want %q", got, want)
	}
	if got, want := string(b[split:]), `"a";r=9;t=40, "b.c";r=0;t=6, "none";r=0;t=1200`; got != want {
		t.Errorf("RateLimit %q, want %q", got, want)
	}
	if RetryAfterSeconds(1500*time.Millisecond) != 2 || RetryAfterSeconds(0) != 1 {
		t.Error("RetryAfterSeconds rounds up, never to 0")
	}
}
