package distributedtest

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/redistest"
)

// threeRules are two enforcing rules and a shadow one on /claims, each of
// an algorithm the multi-rule script combines.
const threeRules = `  - name: all
    key: client
    algorithm: gcra
    rate: 5/m
  - name: claims
    match: { path: /claims, methods: [GET] }
    key: client
    algorithm: fixed_window
    rate: 3/m
  - name: audit
    match: { path: /claims }
    key: client
    mode: shadow
    algorithm: token_bucket
    rate: 1/m
`

// TestSeveralRulesOneRoundTrip checks issue 4's "when one request matches
// several rules, their decisions cost one round trip": each request under
// three rules is one script call, all or nothing, on standalone Redis and
// on a Cluster (a caller's keys share a hash slot). The request claims
// rejects spends nothing of all, and the shadow rule's denials stop
// nothing.
func TestSeveralRulesOneRoundTrip(t *testing.T) {
	t.Run("standalone", func(t *testing.T) {
		srv := redistest.StartServer(t)
		checkOneRoundTrip(t, []string{srv.Addr})
	})
	t.Run("cluster", func(t *testing.T) {
		checkOneRoundTrip(t, redistest.StartCluster(t).Addrs)
	})
}

func checkOneRoundTrip(t *testing.T, addrs []string) {
	up := newUpstream(t)
	s := setup{addrs: addrs, prefix: redistest.KeyPrefix(t), timeout: "5s", onFailure: "closed", instances: 1, rules: threeRules}
	inst := startInstance(t, s, up)
	c := newClient(t)

	before := redistest.ScriptCalls(t, addrs...)
	for i, want := range []int{200, 200, 200, 429} {
		if a := get(c, inst, "partner-a"); a.err != nil || a.status != want {
			t.Fatalf("request %d: status %d (%v), want %d", i, a.status, a.err, want)
		}
	}
	if calls := redistest.ScriptCalls(t, addrs...) - before; calls != 4 {
		t.Errorf("4 requests under 3 rules took %d script calls, want 4 (one round trip each)", calls)
	}
	if got := up.count("partner-a"); got != 3 {
		t.Errorf("%d requests reached the upstream, want 3 (the shadow rule's denials stop nothing)", got)
	}
	// Hammering the limited path: answered from memory, with the other
	// rules' decisions at most a second old, so Redis sees at most one call
	// a second.
	before, start := redistest.ScriptCalls(t, addrs...), time.Now()
	for i := range 50 {
		if a := get(c, inst, "partner-a"); a.err != nil || a.status != 429 {
			t.Fatalf("retry %d: status %d (%v), want 429", i, a.status, a.err)
		}
	}
	allowed := int(time.Since(start)/time.Second) + 1
	if calls := redistest.ScriptCalls(t, addrs...) - before; calls > allowed {
		t.Errorf("50 retries of a limited caller under 3 rules took %d script calls in %v, want at most %d",
			calls, time.Since(start), allowed)
	}
	// all has spent 3 of 5 (the rejected request nothing); this spends a
	// fourth.
	req, err := http.NewRequest(http.MethodGet, inst.url+"/other", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-API-Key", keys["partner-a"])
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("RateLimit"); resp.StatusCode != 200 || !strings.HasPrefix(got, `"all";r=1;`) {
		t.Errorf("/other after 3 passed requests and 1 rejected: status %d, RateLimit %q, want 200 and \"all\";r=1", resp.StatusCode, got)
	}
}
