package httplimit_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
)

func TestShadowRuleNeverRejects(t *testing.T) {
	p := twoRules()
	p.Rules[1].Mode = policy.Shadow // claims: 2/m, shadow; all: 5/m, enforce
	h := newHarness(t, p)
	steps := []struct {
		status int
		claims httplimit.Outcome
	}{
		{200, httplimit.Allowed},
		{200, httplimit.Allowed},
		{200, httplimit.ShadowLimited},
		{200, httplimit.ShadowLimited},
		{200, httplimit.ShadowLimited},
		{429, httplimit.ShadowLimited}, // all (enforce) is full
	}
	for i, s := range steps {
		w := h.get("/claims", "key-a")
		wantStatus(t, w, s.status, fmt.Sprintf("step %d", i))
		rep := h.lastReport()
		if got := outcomes(rep.Report)["claims"]; got != s.claims {
			t.Errorf("step %d: claims outcome %v, want %v", i, got, s.claims)
		}
		if s.claims == httplimit.ShadowLimited {
			if d := rep.Rules[1].Decision; d.Allowed || d.Limit != 2 {
				t.Errorf("step %d: shadow decision %+v, want the denied decision", i, d)
			}
		}
		for _, name := range []string{"RateLimit", "RateLimit-Policy"} {
			items := mustSFList(t, name, w.Header().Values(name))
			if len(items) != 1 || items[0].Value != "all" {
				t.Errorf("step %d: %s %q, want only the enforce rule", i, name, w.Header().Values(name))
			}
		}
		if s.status == 429 {
			if p := readProblem(t, w, 429); !slices.Equal(p.ViolatedPolicies, []string{"all"}) {
				t.Errorf("violated-policies %q, want [all] (never the shadow rule)", p.ViolatedPolicies)
			}
		}
	}
}

func TestShadowOnlyAddsNoHeaders(t *testing.T) {
	p := partners()
	p.Rules[0].Mode = policy.Shadow
	h := newHarness(t, p)
	for i := range 6 {
		w := h.get("/claims", "key-a")
		wantStatus(t, w, 200, fmt.Sprintf("request %d", i))
		for _, name := range []string{"RateLimit", "RateLimit-Policy", "Retry-After"} {
			if v := w.Header().Values(name); len(v) != 0 {
				t.Errorf("request %d: %s %q from a shadow rule", i, name, v)
			}
		}
	}
	if got := outcomes(h.lastReport().Report)["claims"]; got != httplimit.ShadowLimited {
		t.Errorf("sixth request: claims %v, want shadow_limited", got)
	}
	if n := h.servedCount(); n != 6 {
		t.Errorf("handler called %d times, want 6", n)
	}
}

// storeFailure is one way the store can fail to decide.
type storeFailure struct {
	name      string
	set       func(*countingStore)
	onFailure store.FailurePolicy
	// status 0: the request passes; else 503 with retry seconds.
	status int
	retry  string
}

func storeFailures() []storeFailure {
	down := func(err error) func(*countingStore) { return func(s *countingStore) { s.fail(err) } }
	each := func(err error) func(*countingStore) { return func(s *countingStore) { s.resultErr = err } }
	unavailable := func(d time.Duration) error {
		return &store.UnavailableError{RetryAfter: d, Err: errStoreDown}
	}
	return []storeFailure{
		{"batch error, open", down(errStoreDown), store.FailOpen, 0, ""},
		{"batch error, closed", down(errStoreDown), store.FailClosed, 503, "1"},
		{"batch error, local", down(errStoreDown), store.FailLocal, 503, "1"},
		{"result error, open", each(errStoreDown), store.FailOpen, 0, ""},
		{"result error, closed", each(errStoreDown), store.FailClosed, 503, "1"},
		{"too few results, open", func(s *countingStore) { s.short = true }, store.FailOpen, 0, ""},
		{"too few results, closed", func(s *countingStore) { s.short = true }, store.FailClosed, 503, "1"},
		{"Unavailable", down(unavailable(2500 * time.Millisecond)), store.FailOpen, 503, "3"},
		{"wrapped Unavailable", down(fmt.Errorf("redis store: eval: %w", unavailable(7*time.Second))), store.FailOpen, 503, "7"},
		{"Unavailable without a time", down(unavailable(0)), store.FailOpen, 503, "1"},
		{"Unavailable in a result", each(unavailable(4 * time.Second)), store.FailOpen, 503, "4"},
		{"Unavailable, closed", down(unavailable(5 * time.Second)), store.FailClosed, 503, "5"},
	}
}

func TestStoreFailure(t *testing.T) {
	for _, c := range storeFailures() {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, partners(), func(o *httplimit.Options) { o.OnFailure = c.onFailure })
			c.set(h.store)
			w := h.do(req{key: "key-a", header: http.Header{"X-Sluice-Client": {"partner-b"}}})
			rep := h.lastReport()
			if rep.Err == nil {
				t.Error("report Err is nil")
			}
			if got := outcomes(rep.Report)["claims"]; got != httplimit.Failed {
				t.Errorf("claims outcome %v, want store_error", got)
			}
			if c.status == 0 {
				wantStatus(t, w, 200, "fail open")
				if got := h.lastClient(); !slices.Equal(got, []string{"partner-a"}) {
					t.Errorf("X-Sluice-Client %q, want [partner-a]", got)
				}
				if rep.Status != 0 {
					t.Errorf("report Status %d, want 0", rep.Status)
				}
				return
			}
			p := readProblem(t, w, c.status)
			if p.Type != "" && p.Type != "about:blank" {
				t.Errorf("problem type %q for a store failure", p.Type)
			}
			if got := w.Header().Values("Retry-After"); !slices.Equal(got, []string{c.retry}) {
				t.Errorf("Retry-After %q, want %s", got, c.retry)
			}
			if n := h.servedCount(); n != 0 {
				t.Errorf("handler called %d times", n)
			}
			if len(rep.clientHeader) != 0 {
				t.Errorf("503 request still carries X-Sluice-Client %q", rep.clientHeader)
			}
			if rep.Status != c.status {
				t.Errorf("report Status %d, want %d", rep.Status, c.status)
			}
		})
	}
}

// Report.RetryAfter is "the Retry-After of a 429 or 503": a 503 for a store
// failure reports the wait it sent.
func TestStoreFailureReportsRetryAfter(t *testing.T) {
	for _, c := range storeFailures() {
		if c.status == 0 {
			continue
		}
		h := newHarness(t, partners(), func(o *httplimit.Options) { o.OnFailure = c.onFailure })
		c.set(h.store)
		wantStatus(t, h.get("/claims", "key-a"), c.status, c.name)
		if rep := h.lastReport(); rep.RetryAfter < time.Second || fmt.Sprint(ceilSeconds(rep.RetryAfter)) != c.retry {
			t.Errorf("%s: report RetryAfter %v, want the Retry-After sent (%ss)", c.name, rep.RetryAfter, c.retry)
		}
	}
}

// The deprecated FailClosed still fails closed, for programs written
// before OnFailure.
func TestDeprecatedFailClosed(t *testing.T) {
	h := newHarness(t, partners(), func(o *httplimit.Options) { o.FailClosed = true })
	h.store.fail(errStoreDown)
	wantStatus(t, h.get("/claims", "key-a"), 503, "FailClosed")
}

func ceilSeconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// The store's error reaches the report as it was, so that errors.Is works.
func TestStoreFailureReportKeepsError(t *testing.T) {
	h := newHarness(t, partners())
	h.store.fail(fmt.Errorf("redis store: eval: %w", errStoreDown))
	h.get("/claims", "key-a")
	if err := h.lastReport().Err; !errors.Is(err, errStoreDown) {
		t.Errorf("report Err %v does not wrap the store's error", err)
	}
	u := &store.UnavailableError{RetryAfter: time.Second, Err: errStoreDown}
	if !errors.Is(u, errStoreDown) || !strings.Contains(u.Error(), errStoreDown.Error()) {
		t.Errorf("UnavailableError %q does not wrap its cause", u.Error())
	}
}

// After the store recovers, counting goes on where it was.
func TestStoreRecovers(t *testing.T) {
	h := newHarness(t, partners())
	wantStatus(t, h.get("/claims", "key-a"), 200, "1st")
	h.store.fail(errStoreDown)
	for i := range 5 {
		wantStatus(t, h.get("/claims", "key-a"), 200, fmt.Sprintf("store down %d (fail open)", i))
	}
	h.store.fail(nil)
	wantStatus(t, h.get("/claims", "key-a"), 200, "2nd counted")
	wantStatus(t, h.get("/claims", "key-a"), 200, "3rd counted")
	wantStatus(t, h.get("/claims", "key-a"), 429, "4th counted")
}

// OnDecision sees exactly one report per request, whatever the answer, with
// a label-safe client name and never the access key; the key appears in no
// response either, nor in the store's keys.
func TestOnDecisionReportsOncePerRequestWithoutKeys(t *testing.T) {
	const secretA, secretB, wrong = "sEcReT-a-4f1c9e", "sEcReT-b-77aa01", "sEcReT-wrong-0b3d"
	p := partners()
	p.Clients.List[0].Keys = []string{secretA}
	p.Clients.List[1].Keys = []string{secretB}
	p.Rules[0].Rate = rate(1, time.Minute)
	p.Plans["large"] = policy.Plan{}
	closed := false
	h := newHarness(t, p, func(o *httplimit.Options) { o.OnFailure = store.FailClosed })
	steps := []struct {
		name   string
		q      req
		down   bool
		status int
		client string
	}{
		{"allowed", req{key: secretA}, false, 200, "partner-a"},
		{"limited", req{key: secretA}, false, 429, "partner-a"},
		{"unknown key", req{key: wrong}, false, 401, "unknown"},
		{"two keys", req{header: http.Header{"X-Api-Key": {secretA, secretB}}}, false, 400, "unknown"},
		{"no rule", req{key: secretB, path: "/health"}, false, 200, "partner-b"},
		{"store down", req{key: secretB}, true, 503, "partner-b"},
	}
	var bodies []string
	for i, s := range steps {
		if s.down != closed {
			var err error
			if s.down {
				err = fmt.Errorf("store: %w", errStoreDown)
			}
			h.store.fail(err)
			closed = s.down
		}
		w := h.do(s.q)
		wantStatus(t, w, s.status, s.name)
		if n := h.reportCount(); n != i+1 {
			t.Fatalf("%s: %d reports after %d requests", s.name, n, i+1)
		}
		rep := h.lastReport()
		if rep.Client != s.client {
			t.Errorf("%s: report Client %q, want %q", s.name, rep.Client, s.client)
		}
		want := s.status
		if want == 200 {
			want = 0 // passed on
		}
		if rep.Status != want {
			t.Errorf("%s: report Status %d, want %d", s.name, rep.Status, want)
		}
		bodies = append(bodies, fmt.Sprintf("%+v %v %s", rep.Report, w.Header(), w.Body))
	}
	_, keys := h.store.stats()
	for _, k := range keys {
		bodies = append(bodies, k.String())
	}
	for _, text := range bodies {
		for _, secret := range []string{secretA, secretB, wrong, "sEcReT"} {
			if strings.Contains(text, secret) {
				t.Errorf("access key %q leaked into %q", secret, text)
			}
		}
	}
}

// An OnDecision that is not set costs nothing and breaks nothing.
func TestNoOnDecision(t *testing.T) {
	h := newHarness(t, partners(), func(o *httplimit.Options) { o.OnDecision = nil })
	wantStatus(t, h.get("/claims", "key-a"), 200, "no hook")
	readProblem(t, h.get("/claims", "nope"), 401)
	if h.reportCount() != 0 {
		t.Error("reports without a hook")
	}
}

// The Handler answers for itself through a real server too: no
// ResponseRecorder artefacts (Content-Length, one status line).
func TestThroughRealServer(t *testing.T) {
	h := newHarness(t, partners())
	srv := httptest.NewServer(h.handler)
	defer srv.Close()
	client := srv.Client()
	get := func(key string) *http.Response {
		r, _ := http.NewRequest("GET", srv.URL+"/claims/7", nil)
		r.Header.Set("X-API-Key", key)
		r.Header.Set("X-Sluice-Client", "partner-b")
		resp, err := client.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		return resp
	}
	for i, want := range []int{200, 200, 200, 429} {
		if resp := get("key-a"); resp.StatusCode != want {
			t.Fatalf("request %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
	if got := h.lastClient(); !slices.Equal(got, []string{"partner-a"}) {
		t.Errorf("X-Sluice-Client %q over the wire", got)
	}
}
