package promlimit_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/promlimit"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/failover"
	"github.com/sluice-rl/sluice/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// serve puts a limiter fed to c in front of a handler answering 201, with
// two rules: api (1 a minute per address) and shadow (a shadow rule of 0
// room after the first request), and sends n requests from one address.
func serve(t *testing.T, c *promlimit.Collector, n int) {
	t.Helper()
	pol, err := policy.Compile(policy.Policy{Rules: []policy.Rule{
		{Name: "api", Key: policy.KeySpec{Kind: policy.KeyIP}, Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 1, Period: time.Minute}},
		{Name: "shadow", Key: policy.KeySpec{Kind: policy.KeyGlobal}, Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 1, Period: time.Minute}, Mode: policy.Shadow},
	}})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	st := memory.New(memory.Options{Clock: clk})
	t.Cleanup(func() { _ = st.Close() })
	lim, err := httplimit.New(httplimit.Options{Policy: pol, Store: st, Clock: clk, OnDecision: c.OnDecision, OnResponse: c.OnResponse})
	if err != nil {
		t.Fatal(err)
	}
	h := lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusCreated) }))
	for range n {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}
}

// The series the gateway exports, by the same names and labels, counted
// from httplimit's reports.
func TestCollectsDecisionsAndResponses(t *testing.T) {
	c := promlimit.New(promlimit.Options{})
	serve(t, c, 2)
	want := `
# HELP sluice_handler_responses_total The protected handler's answers by status code (other: outside 100-599); the limiter's own answers are responses_total.
# TYPE sluice_handler_responses_total counter
sluice_handler_responses_total{code="201"} 1
# HELP sluice_requests_total Rule decisions by rule, client id and decision (allowed, limited, shadow_limited, exempt, store_error, not_spent: had room, spent nothing as another rule rejected the request; delayed: allowed after being held for its turn by a rule with a delay).
# TYPE sluice_requests_total counter
sluice_requests_total{client="-",decision="allowed",rule="api"} 1
sluice_requests_total{client="-",decision="allowed",rule="shadow"} 1
sluice_requests_total{client="-",decision="limited",rule="api"} 1
sluice_requests_total{client="-",decision="shadow_limited",rule="shadow"} 1
# HELP sluice_responses_total Requests by what sluice did: passed, or answered itself with 400, 401, 403 (the client or its address is blocked: nothing counted), 429 or 503, or 499 (the caller went away while its request waited in a queue or was held for its turn: nothing was answered).
# TYPE sluice_responses_total counter
sluice_responses_total{client="-",code="429"} 1
sluice_responses_total{client="-",code="passed"} 1
# HELP sluice_store_errors_total Requests the store could not decide (passed with on_failure open, 503 with closed).
# TYPE sluice_store_errors_total counter
sluice_store_errors_total 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"sluice_handler_responses_total", "sluice_requests_total", "sluice_responses_total", "sluice_store_errors_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(c, "sluice_decision_seconds"); n != 1 {
		t.Errorf("sluice_decision_seconds: %d series", n)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) != 0 {
		t.Errorf("lint: %v %v", problems, err)
	}
	reg := prometheus.NewPedanticRegistry() // checks that Describe and Collect agree
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Gather(); err != nil {
		t.Error(err)
	}
}

func TestNamespaceAndConstLabels(t *testing.T) {
	c := promlimit.New(promlimit.Options{Namespace: "claims", ConstLabels: prometheus.Labels{"service": "claims-api"}})
	serve(t, c, 1)
	want := `
# HELP claims_responses_total Requests by what sluice did: passed, or answered itself with 400, 401, 403 (the client or its address is blocked: nothing counted), 429 or 503, or 499 (the caller went away while its request waited in a queue or was held for its turn: nothing was answered).
# TYPE claims_responses_total counter
claims_responses_total{client="-",code="passed",service="claims-api"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "claims_responses_total"); err != nil {
		t.Error(err)
	}
}

// A failover store's state and counters are exported as the store reads
// them when collected.
func TestFailoverStore(t *testing.T) {
	shared := memory.New(memory.Options{})
	fs, err := failover.New(failover.Options{Shared: shared, OnFailure: store.FailClosed, StartDegraded: true})
	if err != nil {
		t.Fatal(err)
	}
	defer fs.Close()
	c := promlimit.New(promlimit.Options{Store: fs})
	c.ObserveShared(3 * time.Millisecond)
	want := `
# HELP sluice_store_degraded 1 while the shared store is unreachable and on_failure decides, 0 while counting is shared.
# TYPE sluice_store_degraded gauge
sluice_store_degraded 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "sluice_store_degraded"); err != nil {
		t.Error(err)
	}
	for _, name := range []string{"sluice_store_shared_errors_total", "sluice_store_cached_rejections_total", "sluice_store_degraded_decisions_total", "sluice_store_seconds"} {
		if n := testutil.CollectAndCount(c, name); n != 1 {
			t.Errorf("%s: %d series, want 1", name, n)
		}
	}
	if n := testutil.CollectAndCount(promlimit.New(promlimit.Options{Store: shared}), "sluice_store_degraded"); n != 0 {
		t.Errorf("a memory store exported sluice_store_degraded (%d series)", n)
	}
}
