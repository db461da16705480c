package httplimit_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// The 429 of DESIGN.md "What a caller sees", field by field: partner-a's
// fourth request 37s into a minute window of 3.
func TestRejectedResponseAsDesigned(t *testing.T) {
	h := newHarness(t, partners())
	h.clock.Advance(37 * time.Second)
	for i := range 3 {
		wantStatus(t, h.get("/claims/7", "key-a"), 200, fmt.Sprintf("request %d", i))
	}
	w := h.do(req{path: "/claims/7", key: "key-a", header: http.Header{"X-Sluice-Client": {"partner-b"}}})
	p := readProblem(t, w, http.StatusTooManyRequests)
	want := problemBody{
		Type:             "https://iana.org/assignments/http-problem-types#quota-exceeded",
		Title:            "Too Many Requests",
		Status:           429,
		Detail:           "partner-a exceeded 3 requests per 1m (rule claims); retry in 23s",
		ViolatedPolicies: []string{"claims"},
	}
	if fmt.Sprint(p) != fmt.Sprint(want) {
		t.Errorf("problem\n got %+v\nwant %+v", p, want)
	}
	hdr := w.Header()
	for name, v := range map[string]string{
		"Retry-After":      "23",
		"RateLimit-Policy": `"claims";q=3;w=60`,
		"RateLimit":        `"claims";r=0;t=23`,
		"Cache-Control":    "no-store",
		"Content-Type":     "application/problem+json",
	} {
		if got := hdr.Values(name); !slices.Equal(got, []string{v}) {
			t.Errorf("%s: %q, want %q", name, got, v)
		}
	}
	pol := mustSFList(t, "RateLimit-Policy", hdr.Values("RateLimit-Policy"))
	cur := mustSFList(t, "RateLimit", hdr.Values("RateLimit"))
	if len(pol) != 1 || pol[0].Value != "claims" || pol[0].Params["q"] != 3 || pol[0].Params["w"] != 60 {
		t.Errorf("RateLimit-Policy parsed as %+v", pol)
	}
	if len(cur) != 1 || cur[0].Value != "claims" || cur[0].Params["r"] != 0 || cur[0].Params["t"] != 23 {
		t.Errorf("RateLimit parsed as %+v", cur)
	}
	if n := h.servedCount(); n != 3 {
		t.Errorf("handler called %d times, want 3", n)
	}
	rep := h.lastReport()
	if rep.Status != 429 || rep.RetryAfter != 23*time.Second || rep.Client != "partner-a" {
		t.Errorf("report %+v, want Status 429, RetryAfter 23s, Client partner-a", rep.Report)
	}
	if len(rep.Rules) != 1 || rep.Rules[0].Outcome != httplimit.Limited || rep.Rules[0].Decision.Allowed {
		t.Errorf("report rules %+v, want claims limited", rep.Rules)
	}
	if len(rep.clientHeader) != 0 {
		t.Errorf("rejected request still carries X-Sluice-Client %q", rep.clientHeader)
	}
	// 23 s later, as Retry-After said, the request passes.
	h.clock.Advance(22 * time.Second)
	wantStatus(t, h.get("/claims/7", "key-a"), 429, "after 22s")
	h.clock.Advance(time.Second)
	wantStatus(t, h.get("/claims/7", "key-a"), 200, "after 23s")
}

// Retry-After is whole seconds, rounded up, at least 1.
func TestRetryAfterRoundsUp(t *testing.T) {
	cases := []struct {
		rate   policy.Rate
		at     time.Duration // into the window, when the limit is full
		want   string
		detail string
	}{
		{rate(1, time.Minute), 37 * time.Second, "23", "retry in 23s"},
		{rate(1, time.Minute), 37*time.Second + time.Microsecond, "23", "retry in 23s"},
		{rate(1, time.Minute), 36*time.Second + 999_999*time.Microsecond, "24", "retry in 24s"},
		{rate(1, time.Second), 999_999 * time.Microsecond, "1", "retry in 1s"}, // 1 µs left: never 0
		{rate(1, time.Second), 0, "1", "retry in 1s"},
		{rate(1, 1500*time.Millisecond), 100 * time.Millisecond, "2", "retry in 2s"},
		{rate(1, time.Hour), 0, "3600", "per 1h (rule claims); retry in 3600s"},
		{rate(1, 24*time.Hour), 0, "86400", "per 1d (rule claims); retry in 86400s"},
		{rate(1, 30*time.Second), 0, "30", "per 30s (rule claims); retry in 30s"},
	}
	for _, c := range cases {
		p := partners()
		p.Rules[0].Rate = c.rate
		p.Plans = nil
		p.Clients.List = p.Clients.List[:1]
		p.Clients.List[0].Plan = ""
		h := newHarness(t, p)
		h.clock.Advance(c.at)
		wantStatus(t, h.get("/claims", "key-a"), 200, "first")
		w := h.get("/claims", "key-a")
		if got := w.Header().Get("Retry-After"); got != c.want {
			t.Errorf("%v at %v: Retry-After %q, want %q", c.rate, c.at, got, c.want)
		}
		if d := readProblem(t, w, 429).Detail; !contains(d, c.detail) {
			t.Errorf("%v at %v: detail %q, want it to contain %q", c.rate, c.at, d, c.detail)
		}
	}
}

func contains(s, sub string) bool { return len(sub) == 0 || indexOf(s, sub) >= 0 }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// A caller that waits exactly Retry-After seconds is never early, whatever
// the algorithm: time steps of odd fractions of a second, and after every
// 429 the clock moves by Retry-After and the same request must pass.
func TestRetryAfterIsNeverEarly(t *testing.T) {
	steps := []time.Duration{0, 300 * time.Millisecond, 1700 * time.Millisecond, 10 * time.Microsecond,
		2300 * time.Millisecond, 999_999 * time.Microsecond, 4100 * time.Millisecond, 0, 650 * time.Millisecond}
	for _, alg := range limiter.Algorithms {
		for _, r := range []policy.Rate{rate(3, 10*time.Second), rate(2, 1500*time.Millisecond), rate(5, time.Minute)} {
			t.Run(fmt.Sprintf("%v %v", alg, r), func(t *testing.T) {
				p := partners()
				p.Rules[0].Algorithm = alg
				p.Rules[0].Rate = r
				p.Plans, p.Clients.List = nil, p.Clients.List[:1]
				p.Clients.List[0].Plan = ""
				h := newHarness(t, p)
				h.clock.Advance(123_456 * time.Microsecond)
				rejected := 0
				for i := range 60 {
					h.clock.Advance(steps[i%len(steps)])
					w := h.get("/claims", "key-a")
					if w.Code == 200 {
						continue
					}
					rejected++
					wait := retryAfter(t, w)
					if rep := h.lastReport(); rep.RetryAfter <= 0 || rep.RetryAfter > time.Duration(wait)*time.Second {
						t.Fatalf("step %d: report RetryAfter %v, header %ds", i, rep.RetryAfter, wait)
					}
					h.clock.Advance(time.Duration(wait) * time.Second)
					if w := h.get("/claims", "key-a"); w.Code != 200 {
						t.Fatalf("step %d at %v: 429 with Retry-After %d, yet after %ds: status %d (%s)",
							i, h.clock.Now().Sub(epoch), wait, wait, w.Code, w.Body)
					}
				}
				if rejected == 0 {
					t.Fatal("no request was ever rejected: the steps do not test anything")
				}
			})
		}
	}
}

// Allowed responses carry RateLimit-Policy and RateLimit with one item per
// matched enforce rule, in rule order; shadow and exempt rules add none.
func TestAllowedResponseHeaders(t *testing.T) {
	p := twoRules()
	p.Rules = append(p.Rules,
		policy.Rule{Name: "watch", Algorithm: limiter.FixedWindow, Rate: rate(1, time.Second), Mode: policy.Shadow},
		policy.Rule{Name: "hourly", Match: policy.Match{Path: "/claims"}, Algorithm: limiter.TokenBucket, Rate: rate(100, time.Hour), Burst: 10},
		policy.Rule{Name: "posts", Match: policy.Match{Methods: []string{"POST"}}, Algorithm: limiter.FixedWindow, Rate: rate(1, time.Second)},
	)
	h := newHarness(t, p)
	h.clock.Advance(20*time.Second + 400*time.Millisecond)
	type item struct {
		name   string
		q, w   int64
		r, res int64
	}
	steps := []struct {
		path string
		want []item
	}{
		{"/claims/7", []item{{"all", 5, 60, 4, 40}, {"claims", 2, 60, 1, 40}, {"hourly", 10, 360, 9, 36}}},
		{"/other", []item{{"all", 5, 60, 3, 40}}},
		{"/claims", []item{{"all", 5, 60, 2, 40}, {"claims", 2, 60, 0, 40}, {"hourly", 10, 360, 8, 36}}}, // hourly: the next token in 36s, not the bucket full in 72s
	}
	for _, s := range steps {
		w := h.get(s.path, "key-a")
		wantStatus(t, w, 200, s.path)
		pol := mustSFList(t, "RateLimit-Policy", w.Header().Values("RateLimit-Policy"))
		cur := mustSFList(t, "RateLimit", w.Header().Values("RateLimit"))
		if len(pol) != len(s.want) || len(cur) != len(s.want) {
			t.Fatalf("%s: RateLimit-Policy %q RateLimit %q, want %d items", s.path, w.Header().Get("RateLimit-Policy"), w.Header().Get("RateLimit"), len(s.want))
		}
		for i, want := range s.want {
			got := item{pol[i].Value, pol[i].Params["q"], pol[i].Params["w"], cur[i].Params["r"], cur[i].Params["t"]}
			if got != want || cur[i].Value != want.name || !slices.Equal(pol[i].Keys, []string{"q", "w"}) || !slices.Equal(cur[i].Keys, []string{"r", "t"}) {
				t.Errorf("%s item %d: got %+v (%q / %q), want %+v", s.path, i, got, pol[i].Keys, cur[i].Keys, want)
			}
		}
		if w.Header().Get("X-Ratelimit-Limit") != "" {
			t.Errorf("%s: legacy headers without LegacyHeaders", s.path)
		}
	}
}

func TestLegacyHeaders(t *testing.T) {
	h := newHarness(t, twoRules(), func(o *httplimit.Options) { o.LegacyHeaders = true })
	h.clock.Advance(45 * time.Second)
	steps := []struct {
		path                   string
		status                 int
		limit, remaining, rest string
	}{
		{"/claims", 200, "2", "1", "15"}, // claims (1 left) is tighter than all (4 left)
		{"/other", 200, "5", "3", "15"},
		{"/claims", 200, "2", "0", "15"},
		{"/claims", 429, "2", "0", "15"},
	}
	for i, s := range steps {
		w := h.get(s.path, "key-a")
		wantStatus(t, w, s.status, fmt.Sprintf("step %d", i))
		got := [3]string{w.Header().Get("X-RateLimit-Limit"), w.Header().Get("X-RateLimit-Remaining"), w.Header().Get("X-RateLimit-Reset")}
		if want := [3]string{s.limit, s.remaining, s.rest}; got != want {
			t.Errorf("step %d %s: X-RateLimit-Limit/-Remaining/-Reset %q, want %q", i, s.path, got, want)
		}
		for _, v := range got {
			if _, err := strconv.Atoi(v); err != nil {
				t.Errorf("step %d: %q is not a number", i, v)
			}
		}
	}
}

// A cost no limit can ever allow: 429 without Retry-After, and the detail
// says waiting will not help. policy.Compile refuses such a cost, so it
// arises only where the store decides at a smaller limit than the policy's:
// a local share of it, as with on_failure: local (here a third).
func TestCostAboveLimit(t *testing.T) {
	for _, alg := range limiter.Algorithms {
		p := partners()
		p.Rules[0].Algorithm = alg
		p.Rules[0].Cost = 2 // partner-a's limit is 3/m: its third, 1/m, can never allow 2
		h := newHarness(t, p, func(o *httplimit.Options) { o.Store = &thirdShare{Store: o.Store} })
		w := h.get("/claims", "key-a")
		pr := readProblem(t, w, http.StatusTooManyRequests)
		if v := w.Header().Values("Retry-After"); len(v) != 0 {
			t.Errorf("%v: Retry-After %q on a request that can never pass", alg, v)
		}
		if !contains(pr.Detail, "will never pass") || !contains(pr.Detail, "partner-a exceeded 3 requests per 1m (rule claims)") {
			t.Errorf("%v: detail %q", alg, pr.Detail)
		}
		if rep := h.lastReport(); rep.Status != 429 || rep.RetryAfter != limiter.Never {
			t.Errorf("%v: report Status %d RetryAfter %v, want 429 Never", alg, rep.Status, rep.RetryAfter)
		}
		wantStatus(t, h.get("/claims", "key-b"), 200, "partner-b (5/m, a third: 2/m) can afford 2")
	}
	// The policy itself may not ask for it.
	p := partners()
	p.Rules[0].Cost = 4
	if _, err := policy.Compile(p); err == nil || !contains(err.Error(), "every request would be refused") {
		t.Errorf("Compile with cost 4 over a 3/m limit: %v, want an error", err)
	}
}

// thirdShare decides every request at a third of its limit (rounded up),
// the way each of three instances does with on_failure: local.
type thirdShare struct{ store.Store }

func (s *thirdShare) DecideEach(ctx context.Context, _ []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	return s.Store.DecideEach(ctx, nil, thirds(reqs), now)
}

func (s *thirdShare) DecideAll(ctx context.Context, _ []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	return s.Store.DecideAll(ctx, nil, thirds(reqs), now)
}

// thirds is reqs, each at a third of its limit.
func thirds(reqs []store.Request) []store.Request {
	third := make([]store.Request, len(reqs))
	for i, r := range reqs {
		l := r.Limit
		r.Limit = limiter.MustNew(l.Algorithm(), (l.Rate()+2)/3, l.Period(), (l.Burst()+2)/3)
		third[i] = r
	}
	return third
}

func TestFormatPeriod(t *testing.T) {
	cases := []struct {
		d    time.Duration
		want string
	}{
		{time.Minute, "1m"},
		{30 * time.Second, "30s"},
		{time.Hour, "1h"},
		{24 * time.Hour, "1d"},
		{48 * time.Hour, "2d"},
		{36 * time.Hour, "36h"},
		{90 * time.Minute, "90m"},
		{90 * time.Second, "90s"},
		{1500 * time.Millisecond, "1.5s"}, // as time.Duration writes it
		{time.Millisecond, "1ms"},
	}
	for _, c := range cases {
		if got := httplimit.FormatPeriod(c.d); got != c.want {
			t.Errorf("FormatPeriod(%v) = %q, want %q", c.d, got, c.want)
		}
	}
}
