package httplimit_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
)

// SetPolicy applies to the requests after it; rules whose limit did not
// change keep their counters, a changed limit starts afresh.
func TestSetPolicy(t *testing.T) {
	h := newHarness(t, partners()) // claims: fixed_window 3/m for partner-a
	get := func(key string) int { return h.get("/claims", key).Code }
	for i := range 2 {
		if c := get("key-a"); c != 200 {
			t.Fatalf("before reload %d: %d", i, c)
		}
	}

	// Same claims rule, plus a rule for POST and a client more; partner-b
	// leaves.
	p2 := partners()
	p2.Rules = append(p2.Rules, policy.Rule{Name: "writes", Match: policy.Match{Path: "/claims", Methods: []string{"POST"}},
		Algorithm: limiter.FixedWindow, Rate: rate(1, time.Minute)})
	p2.Clients.List[1] = policy.Client{ID: "partner-d", Keys: []string{"key-d"}}
	c2 := compile(t, p2)
	h.lim.SetPolicy(c2)
	if h.lim.Policy() != c2 {
		t.Error("Policy() does not return the policy set")
	}
	steps := []struct {
		name   string
		method string
		key    string
		status int
	}{
		{"partner-a: claims kept its count (3rd of 3)", "GET", "key-a", 200},
		{"partner-a: 4th of 3", "GET", "key-a", 429},
		{"new rule applies", "POST", "key-a", 200},
		{"new rule limits", "POST", "key-a", 429},
		{"new client known", "GET", "key-d", 200},
		{"removed client unknown", "GET", "key-b", 401},
	}
	for _, s := range steps {
		wantStatus(t, h.do(req{method: s.method, key: s.key}), s.status, s.name)
	}

	// claims at 5/m: a changed limit is a fresh counter, not 4 of 5 used.
	p3 := partners()
	p3.Rules[0].Rate = rate(5, time.Minute)
	h.lim.SetPolicy(compile(t, p3))
	for i := range 5 {
		wantStatus(t, h.get("/claims", "key-a"), 200, fmt.Sprintf("new limit, request %d", i))
	}
	wantStatus(t, h.get("/claims", "key-a"), 429, "new limit, 6th")

	// Back to 3/m: the old counter (3 of 3 spent) is found again in the
	// same window, since the state key names the limit.
	h.lim.SetPolicy(compile(t, partners()))
	wantStatus(t, h.get("/claims", "key-a"), 429, "old limit again")
	h.clock.Advance(time.Minute)
	wantStatus(t, h.get("/claims", "key-a"), 200, "next window")
}

// A changed algorithm with the same rate is a changed limit too: state of
// one algorithm is never read as another's.
func TestSetPolicyChangedAlgorithmStartsFresh(t *testing.T) {
	h := newHarness(t, partners())
	for i := range 3 {
		wantStatus(t, h.get("/claims", "key-a"), 200, fmt.Sprintf("fixed_window %d", i))
	}
	for _, alg := range []limiter.Algorithm{limiter.SlidingLog, limiter.TokenBucket, limiter.GCRA} {
		p := partners()
		p.Rules[0].Algorithm = alg
		h.lim.SetPolicy(compile(t, p))
		for i := range 3 {
			wantStatus(t, h.get("/claims", "key-a"), 200, fmt.Sprintf("%v %d", alg, i))
		}
		wantStatus(t, h.get("/claims", "key-a"), 429, fmt.Sprintf("%v 4th", alg))
	}
}

// Reloading while requests run: every request sees one whole policy (run
// with -race).
func TestSetPolicyConcurrentWithRequests(t *testing.T) {
	h := newHarness(t, partners())
	a, b := compile(t, partners()), compile(t, twoRules())
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				w := h.get("/claims", []string{"key-a", "key-b", "key-c"}[(g+i)%3])
				if w.Code != http.StatusOK && w.Code != http.StatusTooManyRequests {
					t.Errorf("status %d", w.Code)
					return
				}
			}
		})
	}
	for i := range 200 {
		h.lim.SetPolicy([]*policy.Compiled{a, b}[i%2])
	}
	wg.Wait()
	if n := h.reportCount(); n != 400 {
		t.Errorf("%d reports for 400 requests", n)
	}
}
