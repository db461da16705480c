package demo

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/internal/fastproxy"
)

// short is the demo scaled down: 2s instead of 40s, partner A at 100
// requests a second (200 in all), partner B at 10 (20 in all).
var short = Options{
	Duration:      2 * time.Second,
	Progress:      500 * time.Millisecond,
	PartnerAEvery: 10 * time.Millisecond,
	PartnerBEvery: 100 * time.Millisecond,
}

func TestRunCapsPartnerAAndSparesPartnerB(t *testing.T) {
	defer goleak.VerifyNone(t, lingering()...)
	var out bytes.Buffer
	opts := short
	opts.Out = &out
	res, err := Run(t.Context(), opts)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	a, b := res.PartnerA, res.PartnerB
	t.Logf("partner-a %+v\npartner-b %+v", a, b)
	if a.Sent != 200 || a.Failed != 0 || a.Passed+a.Limited != a.Sent {
		t.Errorf("partner-a: sent %d, passed %d, limited %d, failed %d; want 200 sent, each passed or limited",
			a.Sent, a.Passed, a.Limited, a.Failed)
	}
	if a.Limited == 0 || a.Passed > 100 || a.Passed != 100 {
		t.Errorf("partner-a: passed %d, limited %d; want exactly 100 passed (the limit), the rest limited", a.Passed, a.Limited)
	}
	if a.Reached > a.Passed {
		t.Errorf("partner-a: the claims service saw %d requests, sluice passed only %d", a.Reached, a.Passed)
	}
	if b.Sent != 20 || b.Limited != 0 || b.Failed != 0 || b.Passed != b.Sent || b.Reached != b.Sent {
		t.Errorf("partner-b: %+v; want 20 sent, all passed and reached the service, none limited", b)
	}
	if b.Forbidden != 1 {
		t.Errorf("partner-b: %d answers 403; want 1 (its request for a claim of partner-a)", b.Forbidden)
	}
	if res.Interrupted || res.Elapsed != opts.Duration {
		t.Errorf("Interrupted %v, Elapsed %v; want false, %v", res.Interrupted, res.Elapsed, opts.Duration)
	}
	checkRejection(t, res.FirstRejection)
	checkFindings(t, res.Findings)
	checkOutput(t, out.String(),
		"what sluice recognised (the dashboard's findings):",
		"partner-a: retries too soon (rule claims):",
		"partner-b: none",
		"dashboard       "+"http://127.0.0.1:",
		"partner-b asking for a claim of partner-a: 403 Forbidden (the claims service authorises; sluice only counts)",
		"partner      sent  passed    429  reached service   p50 ms   p99 ms",
		"partner-a was limited to 100 of 200 requests; partner-b: all 20 passed, none limited.",
		"partner-a request 101",
		"sluice serve --config",
		"algorithm: sliding_log",
	)
}

// checkFindings checks sluice recognised partner-a's bug (it retries at
// once, before its Retry-After) and nothing of partner-b.
func checkFindings(t *testing.T, fs []Finding) {
	t.Helper()
	var a bool
	for _, f := range fs {
		if slices.Contains(f.Clients, partnerB) {
			t.Errorf("finding %+v names partner-b, whose program works", f)
		}
		if f.Kind == "retries_too_soon" && f.Rule == "claims" && slices.Contains(f.Clients, partnerA) {
			a = true
		}
		if f.Kind == "limit_too_low" && slices.Contains(f.Clients, partnerA) {
			t.Errorf("finding %+v: partner-a ignores Retry-After, its limit is not the problem", f)
		}
	}
	if !a {
		t.Errorf("findings %+v; want partner-a's retries_too_soon on rule claims", fs)
	}
}

// checkRejection checks the first 429 partner A got is what DESIGN.md
// promises a caller.
func checkRejection(t *testing.T, a *Answer) {
	t.Helper()
	if a == nil {
		t.Fatal("FirstRejection is nil; want partner-a's first 429")
	}
	if a.StatusCode != http.StatusTooManyRequests || a.Request != 101 {
		t.Errorf("first rejection: request %d, status %q; want request 101, 429", a.Request, a.Status)
	}
	want := map[string]string{
		"RateLimit-Policy": `"claims";q=100;w=60`,
		"Content-Type":     "application/problem+json",
		"Cache-Control":    "no-store",
	}
	for name, v := range want {
		if got := a.Header.Get(name); got != v {
			t.Errorf("first rejection: %s = %q; want %q", name, got, v)
		}
	}
	if a.Header.Get("Retry-After") == "" || !strings.HasPrefix(a.Header.Get("RateLimit"), `"claims";r=0;t=`) {
		t.Errorf("first rejection: Retry-After %q, RateLimit %q; want a wait and r=0",
			a.Header.Get("Retry-After"), a.Header.Get("RateLimit"))
	}
	if !bytes.Contains(a.Body, []byte("partner-a exceeded 100 requests per 1m (rule claims)")) {
		t.Errorf("first rejection: body %s; want the problem detail naming partner-a and the rule", a.Body)
	}
}

func checkOutput(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func TestRunStopsWhenContextEnds(t *testing.T) {
	defer goleak.VerifyNone(t, lingering()...)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	var out bytes.Buffer
	opts := short
	opts.Duration, opts.Out = 30*time.Second, &out
	res, err := Run(ctx, opts)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if !res.Interrupted || res.Elapsed >= opts.Duration {
		t.Errorf("Interrupted %v, Elapsed %v; want true and less than %v", res.Interrupted, res.Elapsed, opts.Duration)
	}
	if a := res.PartnerA; a.Sent == 0 || a.Failed != 0 {
		t.Errorf("partner-a: %+v; want some requests, each with an answer", a)
	}
	checkOutput(t, out.String(), "result interrupted after", "reached service", "sluice serve --config",
		"partner-a has not reached its limit yet")
}

func TestPercentile(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		var d []time.Duration
		for _, n := range ns {
			d = append(d, time.Duration(n)*time.Millisecond)
		}
		return d
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	tests := []struct {
		sorted []time.Duration
		q      int
		want   time.Duration
	}{
		{nil, 50, 0},
		{ms(7), 50, 7 * time.Millisecond},
		{ms(7), 99, 7 * time.Millisecond},
		{ms(1, 2), 50, 1 * time.Millisecond},
		{ms(1, 2, 3), 50, 2 * time.Millisecond},
		{ms(hundred...), 99, 99 * time.Millisecond},
		{ms(hundred...), 50, 50 * time.Millisecond},
	}
	for _, tc := range tests {
		if got := percentile(tc.sorted, tc.q); got != tc.want {
			t.Errorf("percentile(%v, %d) = %v; want %v", tc.sorted, tc.q, got, tc.want)
		}
	}
}

func TestLimitedLine(t *testing.T) {
	tests := []struct {
		r    PartnerResult
		want string
	}{
		{PartnerResult{ID: "partner-a", Sent: 360, Passed: 100, Limited: 260}, "partner-a was limited to 100 of 360 requests"},
		{PartnerResult{ID: "partner-b", Sent: 40, Passed: 40}, "partner-b: all 40 passed, none limited"},
		{PartnerResult{ID: "partner-b", Sent: 40, Passed: 39, Failed: 1}, "partner-b: 39 of 40 passed, none limited"},
		{PartnerResult{ID: "partner-b"}, "partner-b sent nothing"},
	}
	for _, tc := range tests {
		if got := limitedLine(tc.r); got != tc.want {
			t.Errorf("limitedLine(%+v) = %q; want %q", tc.r, got, tc.want)
		}
	}
}

func TestPace(t *testing.T) {
	tests := []struct {
		every time.Duration
		want  string
	}{
		{time.Second / 9, "9 requests/s (540/min)"},
		{time.Second, "1 request/s (60/min)"},
		{2 * time.Second, "0.5 requests/s (30/min)"},
	}
	for _, tc := range tests {
		if got := pace(tc.every); got != tc.want {
			t.Errorf("pace(%v) = %q; want %q", tc.every, got, tc.want)
		}
	}
}

// Run plays the whole story and prints it; `sluice demo` calls it like this.
func ExampleRun() {
	res, err := Run(context.Background(), Options{})
	if err != nil {
		return
	}
	_ = res.PartnerA.Limited // how many requests sluice answered with 429
}

// lingering ignores the goroutines fasthttp leaves to end on their own
// after the gateway closes (fastproxy.Lingering).
func lingering() []goleak.Option {
	var opts []goleak.Option
	for _, f := range fastproxy.Lingering {
		opts = append(opts, goleak.IgnoreAnyFunction(f))
	}
	return opts
}
