package httplimit_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// oneRule is a policy of one rule counting every path by IP.
func oneRule(alg limiter.Algorithm, r policy.Rate, burst int64) policy.Policy {
	return policy.Policy{Rules: []policy.Rule{{Name: "r", Key: policy.KeySpec{Kind: policy.KeyIP},
		Algorithm: alg, Rate: r, Burst: burst}}}
}

// For the bucket algorithms RateLimit-Policy's q is the bucket size and w
// the time the empty bucket takes to refill (burst / rate), so that q/w is
// the true sustained rate; w is rounded up to whole seconds, so q/w never
// overstates it. The legacy X-RateLimit-Limit says the same q.
func TestPolicyWindowOfBuckets(t *testing.T) {
	cases := []struct {
		alg   limiter.Algorithm
		rate  policy.Rate
		burst int64
		q, w  int64
	}{
		{limiter.GCRA, rate(10, time.Minute), 5, 5, 30},                    // 5 / (10/60 s) = 30 s
		{limiter.TokenBucket, rate(5, time.Second), 3, 3, 1},               // 0.6 s -> 1: 3/s <= 5/s
		{limiter.LeakyBucket, rate(100, time.Hour), 10, 10, 360},           // 10 x 36 s
		{limiter.TokenBucket, rate(3, time.Second), 10, 10, 4},             // 3.33 s -> 4: 2.5/s <= 3/s
		{limiter.GCRA, rate(10, time.Minute), 0, 10, 60},                   // burst defaults to the rate
		{limiter.LeakyBucket, rate(1000, time.Second), 1, 1, 1},            // 1 ms -> 1 s, never 0
		{limiter.GCRA, rate(7, 24*time.Hour), 7000, 7000, 86_400_000},      // 1000 days
		{limiter.TokenBucket, rate(1, 1500*time.Millisecond), 2, 2, 3},     // exactly 3 s
		{limiter.FixedWindow, rate(2, 1500*time.Millisecond), 0, 2, 2},     // windows: the period, rounded up
		{limiter.SlidingWindow, rate(100, time.Minute), 0, 100, 60},        // windows: the period
		{limiter.SlidingLog, rate(5, 100*time.Millisecond), 0, 5, 1},       // rounded up to 1 s
		{limiter.TokenBucket, rate(1, time.Microsecond*1001), 1, 1, 1},     // 1.001 ms -> 1 s
		{limiter.GCRA, rate(3, 10*time.Second), 4, 4, 14},                  // 13.33 s -> 14
		{limiter.TokenBucket, rate(1_000_000, time.Second), 1, 1, 1},       // 1 µs -> 1 s
		{limiter.GCRA, rate(1, 366*24*time.Hour), 100, 100, 3_162_240_000}, // 100 x 366 days
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%v %d/%v burst %d", c.alg, c.rate.N, c.rate.Period, c.burst), func(t *testing.T) {
			h := newHarness(t, oneRule(c.alg, c.rate, c.burst), func(o *httplimit.Options) { o.LegacyHeaders = true })
			w := h.get("/x", "")
			wantStatus(t, w, 200, "first request")
			pol := mustSFList(t, "RateLimit-Policy", w.Header().Values("RateLimit-Policy"))
			if len(pol) != 1 || pol[0].Params["q"] != c.q || pol[0].Params["w"] != c.w {
				t.Errorf("RateLimit-Policy %q, want q=%d;w=%d", w.Header().Get("RateLimit-Policy"), c.q, c.w)
			}
			if got := w.Header().Get("X-RateLimit-Limit"); got != strconv.FormatInt(c.q, 10) {
				t.Errorf("X-RateLimit-Limit %q, want %d", got, c.q)
			}
		})
	}
}
