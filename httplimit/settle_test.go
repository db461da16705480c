package httplimit_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/memory"
)

// settleHarness serves a handler that answers each request with the status
// and X-Cost value the request asks for (?status=, ?cost=) behind a Limiter
// on a memory store, recording what OnSettle reports.
type settleHarness struct {
	t       *testing.T
	handler http.Handler
	mu      sync.Mutex
	errs    []error
	rules   []httplimit.RuleResult // the last request's, from OnDecision
}

func newSettleHarness(t *testing.T, rules ...policy.Rule) *settleHarness {
	t.Helper()
	fake := clock.NewFake(epoch)
	mem := memory.New(memory.Options{Clock: fake})
	t.Cleanup(func() { _ = mem.Close() })
	h := &settleHarness{t: t}
	lim, err := httplimit.New(httplimit.Options{Policy: compile(t, policy.Policy{Rules: rules}), Store: mem, Clock: fake,
		OnSettle: func(_ *http.Request, rule string, err error) {
			h.mu.Lock()
			h.errs = append(h.errs, err)
			h.mu.Unlock()
		},
		OnDecision: func(_ *http.Request, rep *httplimit.Report) {
			h.mu.Lock()
			h.rules = append(h.rules[:0], rep.Rules...)
			h.mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	h.handler = lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Query().Get("then") {
		case "hang": // until the caller leaves, answering nothing (a proxy whose caller went away)
			<-r.Context().Done()
			return
		case "panic":
			panic(http.ErrAbortHandler)
		}
		for _, v := range r.URL.Query()["cost"] {
			w.Header().Add("X-Cost", v)
		}
		status, _ := strconv.Atoi(r.URL.Query().Get("status"))
		w.WriteHeader(max(status, 200))
	}))
	return h
}

// do sends POST path and returns the status and the first rule's
// RateLimit remaining.
func (h *settleHarness) do(path string) (int, string) {
	h.t.Helper()
	w := httptest.NewRecorder()
	h.handler.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "http://sluice.test"+path, nil))
	return w.Code, w.Header().Get("RateLimit")
}

func loginRule(count policy.Count) policy.Rule {
	return policy.Rule{Name: "login-failures", Match: policy.Match{Path: "/login", Methods: []string{"POST"}},
		Key: policy.KeySpec{Kind: policy.KeyIP}, Rate: rate(5, 15*time.Minute), Count: count}
}

// TestCountFailures: with count: failures, successful logins are refunded
// whole, so any number of them leave the caller's 5 failures; the sixth
// attempt after 5 failures is refused.
func TestCountFailures(t *testing.T) {
	h := newSettleHarness(t, loginRule(policy.CountFailures))
	for i := range 20 {
		if code, _ := h.do("/login?status=200"); code != 200 {
			t.Fatalf("successful login %d: %d", i, code)
		}
	}
	for i := range 5 {
		if code, rl := h.do("/login?status=401"); code != 401 {
			t.Fatalf("failed login %d: %d (%s)", i, code, rl)
		}
	}
	if code, _ := h.do("/login?status=200"); code != http.StatusTooManyRequests {
		t.Errorf("after 5 failures: %d, want 429", code)
	}
}

// TestCountSuccesses: the opposite rule refunds failures.
func TestCountSuccesses(t *testing.T) {
	h := newSettleHarness(t, loginRule(policy.CountSuccesses))
	for range 10 {
		h.do("/login?status=500")
	}
	for i := range 5 {
		if code, _ := h.do("/login?status=204"); code != 204 {
			t.Fatalf("success %d: %d", i, code)
		}
	}
	if code, _ := h.do("/login?status=500"); code != http.StatusTooManyRequests {
		t.Errorf("after 5 successes: %d, want 429", code)
	}
}

// TestCostHeader: the reservation (cost 10) is replaced by the upstream's
// figure; a value that is missing, negative, not a number or given twice
// leaves the reservation and is reported.
func TestCostHeader(t *testing.T) {
	rule := policy.Rule{Name: "tokens", Key: policy.KeySpec{Kind: policy.KeyGlobal}, Algorithm: limiter.TokenBucket,
		Rate: rate(100, time.Hour), Cost: 10, CostHeader: "X-Cost"}
	h := newSettleHarness(t, rule)
	steps := []struct {
		query, remaining string
		bad              bool
	}{
		{"?cost=3", `"tokens";r=90;`, false},       // decided at 100-10; 7 back: 97
		{"?cost=25", `"tokens";r=87;`, false},      // 97-10 = 87, then 15 more: 72
		{"", `"tokens";r=62;`, true},               // no header: 10 stand, 62
		{"?cost=-4", `"tokens";r=52;`, true},       // 52
		{"?cost=lots", `"tokens";r=42;`, true},     // 42
		{"?cost=1&cost=2", `"tokens";r=32;`, true}, // 32
		{"?cost=0", `"tokens";r=22;`, false},       // 22, then all 10 back: 32
		{"?cost=0&status=500", `"tokens";r=22;`, false},
	}
	for i, st := range steps {
		h.mu.Lock()
		before := len(h.errs)
		h.mu.Unlock()
		code, rl := h.do("/v1/complete" + st.query)
		if code >= 300 && code != 500 || !strings.HasPrefix(rl, st.remaining) {
			t.Errorf("step %d (%s): %d %s, want %s", i, st.query, code, rl, st.remaining)
		}
		h.mu.Lock()
		reported := len(h.errs) > before
		var ce *httplimit.CostError
		if reported && !errors.As(h.errs[len(h.errs)-1], &ce) {
			t.Errorf("step %d: reported %v, want a *CostError", i, h.errs[len(h.errs)-1])
		}
		h.mu.Unlock()
		if reported != st.bad {
			t.Errorf("step %d (%s): reported %v, want %v", i, st.query, reported, st.bad)
		}
	}
}

// TestRefusedBySluiceIsRefunded: a request that another rule refused (429)
// never reached the service: a shadow rule counting failures, which spent
// on it, is refunded whole, not charged a failure for sluice's own 429.
func TestRefusedBySluiceIsRefunded(t *testing.T) {
	strict := policy.Rule{Name: "strict", Key: policy.KeySpec{Kind: policy.KeyIP}, Algorithm: limiter.FixedWindow, Rate: rate(1, time.Minute)}
	watch := loginRule(policy.CountFailures)
	watch.Name, watch.Match, watch.Mode, watch.Rate = "watch", policy.Match{}, policy.Shadow, rate(2, time.Minute)
	h := newSettleHarness(t, strict, watch)
	for i, want := range []int{200, 429, 429, 429} {
		if code, _ := h.do("/login?status=200"); code != want {
			t.Fatalf("request %d: %d, want %d", i, code, want)
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range h.rules {
		if r.Rule == "watch" && (r.Outcome != httplimit.Allowed || r.Decision.Remaining != 1) {
			t.Errorf("watch after three 429s of sluice's: %+v, want allowed with 1 left (2 less this request's reservation)", r)
		}
	}
}

// TestUnansweredKeepsItsReservation: a request passed on that has no
// answer (its caller left while the service worked on it, or the handler
// panicked before answering) is no success to refund under count:
// failures, nor a failure to refund under count: successes: the service
// may have done the work, so its reservation stands. Before, nothing
// written read as a 200, so a caller could make any number of login
// attempts uncounted by leaving before each answer.
func TestUnansweredKeepsItsReservation(t *testing.T) {
	for _, count := range []policy.Count{policy.CountFailures, policy.CountSuccesses} {
		for _, then := range []string{"hang", "panic"} {
			t.Run(count.String()+"/"+then, func(t *testing.T) {
				h := newSettleHarness(t, loginRule(count))
				for range 5 {
					ctx, cancel := context.WithCancel(context.Background())
					r := httptest.NewRequest(http.MethodPost, "http://sluice.test/login?then="+then, nil).WithContext(ctx)
					if then == "hang" {
						cancel() // the caller has left
					}
					func() {
						defer func() { _ = recover() }()
						h.handler.ServeHTTP(httptest.NewRecorder(), r)
					}()
					cancel()
				}
				if code, _ := h.do("/login?status=401"); code != http.StatusTooManyRequests {
					t.Errorf("after 5 unanswered attempts: %d, want 429", code)
				}
			})
		}
	}
}
