package httplimit_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

// SetPolicy applies to the requests after it; rules keep their counters,
// also when their limit changed.
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

	// claims at 5/m: a changed limit keeps its count, 3 of 5 used.
	p3 := partners()
	p3.Rules[0].Rate = rate(5, time.Minute)
	h.lim.SetPolicy(compile(t, p3))
	wantStatus(t, h.get("/claims", "key-a"), 200, "new limit, 4th of 5")
	wantStatus(t, h.get("/claims", "key-a"), 200, "new limit, 5th of 5")
	wantStatus(t, h.get("/claims", "key-a"), 429, "new limit, 6th of 5")

	// Back to 3/m: 5 of 3 spent, nothing left in this window.
	h.lim.SetPolicy(compile(t, partners()))
	wantStatus(t, h.get("/claims", "key-a"), 429, "old limit again")
	h.clock.Advance(time.Minute)
	wantStatus(t, h.get("/claims", "key-a"), 200, "next window")
}

// A reload that tightens a limit gives a limited caller no fresh quota, and
// one that loosens it gives only the difference; so does a client's limit
// changed by its plan. Every algorithm, on the memory store and on Redis.
func TestReloadKeepsCounters(t *testing.T) {
	srv := redistest.StartServer(t)
	for _, alg := range limiter.Algorithms {
		t.Run(alg.String(), func(t *testing.T) { checkReloadKeepsCounters(t, newHarness(t, onePartner(alg, 4)), alg) })
		t.Run(alg.String()+"_redis", func(t *testing.T) {
			// A store error answers 503 rather than letting a request pass.
			s := newRedisStore(t, srv.Addr)
			h := newHarness(t, onePartner(alg, 4), func(o *httplimit.Options) { o.Store, o.OnFailure = s, store.FailClosed })
			checkReloadKeepsCounters(t, h, alg)
		})
	}
}

// onePartner is partner-a on plan standard, limited to n/m on claims by alg.
func onePartner(alg limiter.Algorithm, n int64) policy.Policy {
	p := partners()
	p.Rules[0].Algorithm, p.Rules[0].Rate = alg, rate(n, time.Minute)
	return p
}

// checkReloadKeepsCounters spends partner-a's 4/m, then reloads to 2/m,
// to 8/m, and moves partner-a to a plan of 16/m; no time passes.
func checkReloadKeepsCounters(t *testing.T, h *harness, alg limiter.Algorithm) {
	t.Helper()
	spend := func(what string, n int) {
		t.Helper()
		for i := range n {
			wantStatus(t, h.get("/claims", "key-a"), 200, fmt.Sprintf("%s: request %d of %d", what, i+1, n))
		}
		wantStatus(t, h.get("/claims", "key-a"), 429, what+": one more")
	}
	spend("4/m", 4)
	h.lim.SetPolicy(compile(t, onePartner(alg, 2)))
	spend("tightened to 2/m", 0)
	// 4 of 8 spent. A bucket fuller than 2/m's burst was emptied to it by
	// the tightening (a bucket holds at most its burst): 2 of 8 spent.
	left := 4
	if alg.HasBurst() {
		left = 6
	}
	h.lim.SetPolicy(compile(t, onePartner(alg, 8)))
	spend("loosened to 8/m", left)
	p := onePartner(alg, 8)
	p.Plans["standard"] = policy.Plan{Limits: map[string]policy.Rate{"claims": rate(16, time.Minute)}}
	h.lim.SetPolicy(compile(t, p))
	spend("plan of 16/m", 8)
}

// A changed algorithm starts fresh: state of one algorithm is never read as
// another's.
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

// TestSharedKeysCountPerLimitSource: a rule that counts callers together
// (here by header value) keeps one counter per source of the caller's
// limit: partner-b (plan large, 5/m) using up its tenant's counter leaves
// partner-a (the rule's own 3/m) and assessor-c (its own 4/m) theirs, as
// two rates on one counter would have the smaller one see the larger
// one's spending (and a bucket change its units at every request).
func TestSharedKeysCountPerLimitSource(t *testing.T) {
	p := partners()
	p.Rules[0].Key = policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant"}
	h := newHarness(t, p)
	tenant := http.Header{"X-Tenant": {"acme"}}
	send := func(key string, n int, want int) {
		t.Helper()
		for i := range n {
			wantStatus(t, h.do(req{key: key, header: tenant}), want, fmt.Sprintf("%s request %d", key, i+1))
		}
	}
	send("key-b", 5, 200)
	send("key-b", 1, 429)
	send("key-a", 3, 200)
	send("key-a", 1, 429)
	send("key-c", 4, 200)
	send("key-c", 1, 429)
	other := http.Header{"X-Tenant": {"bolt"}}
	if a, b := h.keyOf(req{key: "key-a", header: other}), h.keyOf(req{key: "key-b", header: other}); a == b {
		t.Errorf("partner-a and partner-b share the key %q under different limits", a)
	}
}
