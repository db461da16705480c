package httplimit_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/throttle"
)

// inFlightPolicy is partners with claims at 100/m and a concurrency rule,
// partner-in-flight, allowing 2 in flight (plan large: 3).
func inFlightPolicy() policy.Policy {
	p := partners()
	p.Rules[0].Rate = rate(100, time.Minute)
	p.Rules = append(p.Rules, policy.Rule{Name: "partner-in-flight", Match: policy.Match{Path: "/claims"}, Concurrency: 2})
	p.Plans["large"] = policy.Plan{Limits: p.Plans["large"].Limits, Concurrency: map[string]int64{"partner-in-flight": 3}}
	return p
}

// holding is a Limiter whose handler holds every request until told to
// let it go, on a memory store that is also its Leaser.
type holding struct {
	*harness
	leaser  store.Leaser
	handler http.Handler
	entered chan struct{}
	mu      sync.Mutex
	gates   []chan struct{}
}

// newHolding builds a holding harness for p; leaser, if not nil, wraps
// the memory store as the Leaser.
func newHolding(t *testing.T, p policy.Policy, leaser func(store.Leaser) store.Leaser, opt ...func(*httplimit.Options)) *holding {
	hd := &holding{entered: make(chan struct{}, 100)}
	opt = append(opt, func(o *httplimit.Options) {
		hd.leaser = o.Store.(*countingStore).Store.(store.Leaser)
		if leaser != nil {
			hd.leaser = leaser(hd.leaser)
		}
		o.Leaser = hd.leaser
	})
	hd.harness = newHarness(t, p, opt...)
	t.Cleanup(func() { hd.letGo(t) }) // a test that failed while requests were held
	hd.handler = hd.lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gate := make(chan struct{})
		hd.mu.Lock()
		hd.gates = append(hd.gates, gate)
		hd.mu.Unlock()
		hd.entered <- struct{}{}
		<-gate
		_, _ = w.Write([]byte("ok"))
	}))
	return hd
}

// hold sends GET /claims with key and waits until the handler holds it;
// done is closed with the answer once it is let go.
func (hd *holding) hold(key string) (done chan *httptest.ResponseRecorder) {
	hd.t.Helper()
	done = make(chan *httptest.ResponseRecorder, 1)
	go func() {
		r := httptest.NewRequest(http.MethodGet, "http://sluice.test/claims", nil)
		r.Header.Set("X-API-Key", key)
		w := httptest.NewRecorder()
		hd.handler.ServeHTTP(w, r)
		done <- w
	}()
	select {
	case <-hd.entered:
	case w := <-done:
		hd.t.Fatalf("%s: answered %d %q, want held", key, w.Code, w.Body.String())
	case <-time.After(10 * time.Second):
		hd.t.Fatal("request never reached the handler")
	}
	return done
}

// send sends GET /claims with key, which must not reach the handler.
func (hd *holding) send(key string) *httptest.ResponseRecorder {
	hd.t.Helper()
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		r := httptest.NewRequest(http.MethodGet, "http://sluice.test/claims", nil)
		r.Header.Set("X-API-Key", key)
		w := httptest.NewRecorder()
		hd.handler.ServeHTTP(w, r)
		done <- w
	}()
	select {
	case w := <-done:
		return w
	case <-hd.entered:
		hd.t.Fatalf("%s: passed to the handler, want an answer from the Limiter", key)
		return nil
	}
}

// letGo lets every held request finish and waits for their answers.
func (hd *holding) letGo(t *testing.T, done ...chan *httptest.ResponseRecorder) {
	t.Helper()
	hd.mu.Lock()
	for _, g := range hd.gates {
		close(g)
	}
	hd.gates = nil
	hd.mu.Unlock()
	for _, d := range done {
		if w := <-d; w.Code != http.StatusOK {
			t.Errorf("held request answered %d, want 200", w.Code)
		}
	}
}

// inFlight returns how many slots key holds in the memory store.
func (hd *holding) inFlight(t *testing.T, key store.Key) int64 {
	t.Helper()
	d, err := hd.mem.Acquire(context.Background(), key, store.Concurrency{Max: 1000}, hd.clock.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return d.InFlight
}

func clientLeaseKey(client, rule string) store.Key {
	return store.GroupKey(store.Parts("client", client), rule, "concurrency")
}

func TestConcurrencyRule(t *testing.T) {
	hd := newHolding(t, inFlightPolicy(), nil)
	a1, a2 := hd.hold("key-a"), hd.hold("key-a")
	w := hd.send("key-a")
	p := readProblem(t, w, http.StatusTooManyRequests)
	if want := "partner-a exceeded 2 requests in flight (rule partner-in-flight); retry in 1s"; p.Detail != want {
		t.Errorf("detail %q, want %q", p.Detail, want)
	}
	if !slices.Equal(p.ViolatedPolicies, []string{"partner-in-flight"}) || p.Type != "https://iana.org/assignments/http-problem-types#quota-exceeded" {
		t.Errorf("problem %+v", p)
	}
	if retryAfter(t, w) != 1 {
		t.Errorf("Retry-After %q, want 1", w.Header().Get("Retry-After"))
	}
	wantHeader(t, w, "RateLimit-Policy", `"claims";q=100;w=60, "partner-in-flight";q=2;qu="concurrent-requests"`)
	wantHeader(t, w, "RateLimit", `"claims";r=97;t=60, "partner-in-flight";r=0`)
	rep := hd.lastReport()
	if rep.Status != 429 || rep.Counted != "partner-a" || len(rep.Rules) != 2 || rep.Rules[1].Outcome != httplimit.Limited {
		t.Errorf("report %+v", rep.Report)
	}

	// partner-b (plan large: 3) is unaffected.
	b := hd.hold("key-b")
	rep = hd.lastReport()
	if rep.Rules[1].Outcome != httplimit.Allowed || rep.Rules[1].Decision.Remaining != 2 || rep.Rules[1].Decision.Limit != 3 {
		t.Errorf("partner-b report %+v", rep.Rules)
	}

	// After the responses the slots are back.
	hd.letGo(t, a1, a2, b)
	if n := hd.inFlight(t, clientLeaseKey("partner-a", "partner-in-flight")); n != 0 {
		t.Fatalf("partner-a holds %d slots after its responses, want 0", n)
	}
	w = hd.do(req{key: "key-a"})
	wantStatus(t, w, 200, "after the responses")
	wantHeader(t, w, "RateLimit", `"claims";r=96;t=60, "partner-in-flight";r=1`) // the 429 counted against claims
}

func wantHeader(t *testing.T, w *httptest.ResponseRecorder, name, want string) {
	t.Helper()
	if got := w.Header().Values(name); len(got) != 1 || got[0] != want {
		t.Errorf("%s: %q, want %q", name, got, want)
	}
}

// A request the rate rule refuses takes no slot.
func TestRateRefusalHoldsNoLease(t *testing.T) {
	p := inFlightPolicy()
	p.Rules[0].Rate = rate(1, time.Minute)
	hd := newHolding(t, p, nil)
	wantStatus(t, hd.do(req{key: "key-a"}), 200, "first")
	w := hd.do(req{key: "key-a"})
	if p := readProblem(t, w, 429); !slices.Equal(p.ViolatedPolicies, []string{"claims"}) {
		t.Errorf("violated %q, want claims", p.ViolatedPolicies)
	}
	if n := hd.inFlight(t, clientLeaseKey("partner-a", "partner-in-flight")); n != 0 {
		t.Errorf("a request the rate refused holds %d slots, want 0", n)
	}
	if rep := hd.lastReport(); rep.Rules[1].Outcome != httplimit.NotSpent {
		t.Errorf("report %+v, want partner-in-flight not_spent", rep.Rules)
	}
	if w.Header().Get("RateLimit") != `"claims";r=0;t=60` {
		t.Errorf("RateLimit %q", w.Header().Get("RateLimit"))
	}
}

// A second concurrency rule that is full gives back the first one's slot.
func TestLaterConcurrencyRuleReleases(t *testing.T) {
	p := inFlightPolicy()
	p.Rules = append(p.Rules, policy.Rule{Name: "all-in-flight", Key: policy.KeySpec{Kind: policy.KeyGlobal}, Concurrency: 1})
	hd := newHolding(t, p, nil)
	a := hd.hold("key-a")
	w := hd.send("key-b")
	if p := readProblem(t, w, 429); !slices.Equal(p.ViolatedPolicies, []string{"all-in-flight"}) {
		t.Errorf("violated %q", p.ViolatedPolicies)
	}
	if n := hd.inFlight(t, clientLeaseKey("partner-b", "partner-in-flight")); n != 0 {
		t.Errorf("partner-b holds %d slots of partner-in-flight after its 429, want 0", n)
	}
	rep := hd.lastReport()
	if got := []httplimit.Outcome{rep.Rules[1].Outcome, rep.Rules[2].Outcome}; !slices.Equal(got, []httplimit.Outcome{httplimit.NotSpent, httplimit.Limited}) {
		t.Errorf("outcomes %v, want not_spent, limited", got)
	}
	hd.letGo(t, a)
}

// A shadow concurrency rule counts and reports, and refuses nothing.
func TestShadowConcurrencyRule(t *testing.T) {
	p := inFlightPolicy()
	p.Rules[1].Mode = policy.Shadow
	hd := newHolding(t, p, nil)
	done := []chan *httptest.ResponseRecorder{hd.hold("key-a"), hd.hold("key-a"), hd.hold("key-a")}
	rep := hd.lastReport()
	if rep.Status != 0 || rep.Rules[1].Outcome != httplimit.ShadowLimited {
		t.Errorf("report %+v, want passed, shadow_limited", rep.Report)
	}
	hd.letGo(t, done...)
	if n := hd.inFlight(t, clientLeaseKey("partner-a", "partner-in-flight")); n != 0 {
		t.Errorf("%d slots held after the responses, want 0", n)
	}
}

// A handler that panics (ReverseProxy's http.ErrAbortHandler when the
// caller goes away) still gives its slot back, on a context that the
// caller's leaving has not canceled.
func TestLeaseReleasedWhenCallerAborts(t *testing.T) {
	var mu sync.Mutex
	var releaseErrs []error
	hd := newHolding(t, inFlightPolicy(), func(l store.Leaser) store.Leaser {
		return ctxLeaser{Leaser: l, released: func(err error) { mu.Lock(); releaseErrs = append(releaseErrs, err); mu.Unlock() }}
	})
	ctx, cancel := context.WithCancel(context.Background())
	h := hd.lim.Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		cancel()
		panic(http.ErrAbortHandler)
	}))
	r := httptest.NewRequest(http.MethodGet, "http://sluice.test/claims", nil).WithContext(ctx)
	r.Header.Set("X-API-Key", "key-a")
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Errorf("recovered %v", v)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), r)
	}()
	if n := hd.inFlight(t, clientLeaseKey("partner-a", "partner-in-flight")); n != 0 {
		t.Errorf("%d slots held after the handler panicked, want 0", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(releaseErrs) != 1 || releaseErrs[0] != nil {
		t.Errorf("release contexts' errors %v, want one nil", releaseErrs)
	}
}

// ctxLeaser reports the context error each Release sees.
type ctxLeaser struct {
	store.Leaser
	released func(error)
}

func (c ctxLeaser) Release(ctx context.Context, l store.Lease, now time.Time) error {
	c.released(ctx.Err())
	return c.Leaser.Release(ctx, l, now)
}

// failingLeaser fails every Acquire.
type failingLeaser struct{ store.Leaser }

func (failingLeaser) Acquire(context.Context, store.Key, store.Concurrency, time.Time, int64) (store.LeaseDecision, error) {
	return store.LeaseDecision{}, errStoreDown
}

func TestLeaserFails(t *testing.T) {
	fail := func(l store.Leaser) store.Leaser { return failingLeaser{l} }
	t.Run("open", func(t *testing.T) {
		hd := newHolding(t, inFlightPolicy(), fail)
		wantStatus(t, hd.do(req{key: "key-a"}), 200, "fail open")
		if rep := hd.lastReport(); rep.Err == nil || rep.Rules[1].Outcome != httplimit.Failed {
			t.Errorf("report %+v", rep.Report)
		}
	})
	t.Run("closed", func(t *testing.T) {
		hd := newHolding(t, inFlightPolicy(), fail, func(o *httplimit.Options) { o.OnFailure = store.FailClosed })
		w := hd.do(req{key: "key-a"})
		readProblem(t, w, http.StatusServiceUnavailable)
		if hd.servedCount() != 0 {
			t.Error("handler called")
		}
	})
}

func TestNoLeaser(t *testing.T) {
	mem := memory.New(memory.Options{})
	defer mem.Close()
	_, err := httplimit.New(httplimit.Options{Policy: compile(t, inFlightPolicy()), Store: struct{ store.Store }{mem}})
	if err == nil || !strings.Contains(err.Error(), "keeps no leases") {
		t.Errorf("New: %v, want an error saying the store keeps no leases", err)
	}
}

// A request the throttle refuses after its concurrency rules gave it a slot
// gives the slot back.
func TestThrottleRefusalReleasesLease(t *testing.T) {
	thr, err := throttle.New(throttle.Config{MaxInFlight: 1, ShedFrom: 0.5, Rand: func() float64 { return 0 }})
	if err != nil {
		t.Fatal(err)
	}
	p := inFlightPolicy()
	p.Rules = append(p.Rules, policy.Rule{Name: "reports-in-flight", Match: policy.Match{Path: "/reports"}, Concurrency: 5, Degrade: true})
	hd := newHolding(t, p, nil, func(o *httplimit.Options) { o.Throttle = thr })
	held := hd.hold("key-a")
	w := hd.do(req{path: "/reports", key: "key-a"})
	wantStatus(t, w, http.StatusServiceUnavailable, "degraded while the throttle is full")
	if n := hd.inFlight(t, clientLeaseKey("partner-a", "reports-in-flight")); n != 0 {
		t.Errorf("the refused request holds %d slots, want 0", n)
	}
	hd.letGo(t, held)
}
