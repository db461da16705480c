package httplimit_test

import (
	"fmt"
	"net/http/httptest"
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

// rateLimitItem returns the r and t of rule name in w's RateLimit.
func rateLimitItem(t *testing.T, w *httptest.ResponseRecorder, name string) (r, tt int64) {
	t.Helper()
	for _, it := range mustSFList(t, "RateLimit", w.Header().Values("RateLimit")) {
		if it.Value == name {
			return it.Params["r"], it.Params["t"]
		}
	}
	t.Fatalf("RateLimit %q has no item %q", w.Header().Get("RateLimit"), name)
	return 0, 0
}

// t is the seconds until more quota is available, not until the limit is
// back in full: a sliding window frees quota before the window has passed,
// a bucket a token at a time, a log when its oldest entry expires.
func TestTIsTimeToMoreQuota(t *testing.T) {
	type step struct {
		at     time.Duration // from the epoch
		status int
		r, t   int64
	}
	cases := []struct {
		name  string
		alg   limiter.Algorithm
		rate  policy.Rate
		burst int64
		steps []step
	}{
		// 3 at 0s; at 30s the window's 3 weigh 3 until 60s, 2 from 60s+1µs:
		// Retry-After 31 and t 31, not the 90s until both windows are empty.
		{"sliding_window", limiter.SlidingWindow, rate(3, time.Minute), 0, []step{
			{0, 200, 2, 61}, {0, 200, 1, 61}, {0, 200, 0, 61}, {30 * time.Second, 429, 0, 31},
			// prev 3 at e = 10s: floor(3·50/60) = 2, 1 left; 1 only after e = 20s.
			{70 * time.Second, 200, 0, 11},
		}},
		// Entries at 0, 20 and 30s: the one of 0s frees a unit at 60s.
		{"sliding_log", limiter.SlidingLog, rate(3, time.Minute), 0, []step{
			{0, 200, 2, 60}, {20 * time.Second, 200, 1, 40}, {30 * time.Second, 200, 0, 30},
			{45 * time.Second, 429, 0, 15},
		}},
		// A token every 36s; the bucket is full again only 36s per token later.
		{"token_bucket", limiter.TokenBucket, rate(100, time.Hour), 3, []step{
			{0, 200, 2, 36}, {0, 200, 1, 36}, {time.Second, 200, 0, 35}, {10 * time.Second, 429, 0, 26},
		}},
		{"gcra", limiter.GCRA, rate(10, time.Minute), 5, []step{
			{0, 200, 4, 6}, {0, 200, 3, 6}, {0, 200, 2, 6}, {0, 200, 1, 6}, {0, 200, 0, 6},
			{1500 * time.Millisecond, 429, 0, 5},
		}},
		{"fixed_window", limiter.FixedWindow, rate(2, time.Minute), 0, []step{
			{10 * time.Second, 200, 1, 50}, {20 * time.Second, 200, 0, 40}, {30 * time.Second, 429, 0, 30},
			{time.Minute, 200, 1, 60},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, oneRule(c.alg, c.rate, c.burst))
			for i, s := range c.steps {
				h.clock.Set(epoch.Add(s.at))
				w := h.get("/x", "")
				wantStatus(t, w, s.status, fmt.Sprintf("step %d", i))
				if r, tt := rateLimitItem(t, w, "r"); r != s.r || tt != s.t {
					t.Errorf("step %d at %v: RateLimit %q, want r=%d;t=%d", i, s.at, w.Header().Get("RateLimit"), s.r, s.t)
				}
				if s.status == 429 && w.Header().Get("Retry-After") != strconv.FormatInt(s.t, 10) {
					t.Errorf("step %d: Retry-After %q, want t = %d", i, w.Header().Get("Retry-After"), s.t)
				}
			}
		})
	}
}

// On every 429, whatever the algorithm, t equals Retry-After (whole
// seconds, never 0), and so does the legacy X-RateLimit-Reset; on an
// allowed response t is 0 exactly when the rule is at its full limit.
func TestTEqualsRetryAfter(t *testing.T) {
	steps := []time.Duration{0, 300 * time.Millisecond, 1700 * time.Millisecond, 10 * time.Microsecond,
		2300 * time.Millisecond, 999_999 * time.Microsecond, 4100 * time.Millisecond, 0, 650 * time.Millisecond}
	for _, alg := range limiter.Algorithms {
		for _, r := range []policy.Rate{rate(3, 10*time.Second), rate(2, 1500*time.Millisecond), rate(5, time.Minute)} {
			t.Run(fmt.Sprintf("%v %v", alg, r), func(t *testing.T) {
				h := newHarness(t, oneRule(alg, r, 0), func(o *httplimit.Options) { o.LegacyHeaders = true })
				h.clock.Advance(123_456 * time.Microsecond)
				rejected := 0
				for i := range 60 {
					h.clock.Advance(steps[i%len(steps)])
					w := h.get("/x", "")
					rem, tt := rateLimitItem(t, w, "r")
					if legacy := w.Header().Get("X-RateLimit-Reset"); legacy != strconv.FormatInt(tt, 10) {
						t.Fatalf("step %d: X-RateLimit-Reset %q, t %d", i, legacy, tt)
					}
					if w.Code == 200 {
						if (tt == 0) != (rem == r.N) {
							t.Fatalf("step %d: allowed with r=%d;t=%d (limit %d)", i, rem, tt, r.N)
						}
						continue
					}
					rejected++
					if wait := retryAfter(t, w); tt != wait {
						t.Fatalf("step %d: 429 with Retry-After %d and t=%d", i, wait, tt)
					}
				}
				if rejected == 0 {
					t.Fatal("no request was ever rejected: the steps do not test anything")
				}
			})
		}
	}
}

// With several rules, a 429's legacy X-RateLimit-* speak of the rule whose
// wait is its Retry-After, even when another rule has less remaining.
func TestLegacyHeadersOfA429(t *testing.T) {
	p := policy.Policy{Rules: []policy.Rule{
		{Name: "hourly", Key: policy.KeySpec{Kind: policy.KeyIP}, Algorithm: limiter.FixedWindow, Rate: rate(4, time.Hour), Cost: 3},
		{Name: "b", Match: policy.Match{Path: "/b"}, Key: policy.KeySpec{Kind: policy.KeyIP}, Algorithm: limiter.FixedWindow, Rate: rate(1, time.Minute)},
	}}
	h := newHarness(t, p, func(o *httplimit.Options) { o.LegacyHeaders = true })
	wantStatus(t, h.get("/b", ""), 200, "first") // hourly 1 left, b none
	h.clock.Advance(20 * time.Second)
	w := h.get("/b", "")
	wantStatus(t, w, 429, "second")
	got := [3]string{w.Header().Get("X-RateLimit-Limit"), w.Header().Get("X-RateLimit-Remaining"), w.Header().Get("X-RateLimit-Reset")}
	if want := [3]string{"4", "1", "3580"}; got != want || w.Header().Get("Retry-After") != "3580" {
		t.Errorf("X-RateLimit-Limit/-Remaining/-Reset %q with Retry-After %q, want %q (rule hourly)", got, w.Header().Get("Retry-After"), want)
	}
	if r, tt := rateLimitItem(t, w, "b"); r != 0 || tt != 40 {
		t.Errorf("b: r=%d;t=%d, want r=0;t=40", r, tt)
	}
}
