package decision_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// epoch is where every fake clock starts: aligned on minutes.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// hdr is a request's or response's header fields as a test writes them:
// canonical names, except where a test spells one otherwise on purpose.
type hdr map[string][]string

func (h hdr) Values(dst []string, name string) []string { return append(dst, h[name]...) }

func (h hdr) Names(dst []string) []string {
	for k := range h {
		dst = append(dst, k)
	}
	return dst
}

// claims is the DESIGN's story in small: partner-a by key, 1 request a
// minute on /claims; unknown keys rejected.
func claims(t testing.TB) *policy.Compiled {
	t.Helper()
	c, err := policy.Compile(policy.Policy{
		Clients: policy.Clients{List: []policy.Client{{ID: "partner-a", Keys: []string{"key-a"}}}},
		Rules: []policy.Rule{{Name: "claims", Match: policy.Match{Path: "/claims"}, Key: policy.KeySpec{Kind: policy.KeyClient},
			Algorithm: limiter.FixedWindow, Rate: policy.Rate{N: 1, Period: time.Minute}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// engine returns an Engine over a fresh memory store on a fake clock.
func engine(t testing.TB, st store.Store, opts ...func(*decision.Options)) *decision.Engine {
	t.Helper()
	clk := clock.NewFake(epoch)
	if st == nil {
		mem := memory.New(memory.Options{Clock: clk})
		t.Cleanup(func() { _ = mem.Close() })
		st = mem
	}
	o := decision.Options{Store: st, Clock: clk}
	for _, f := range opts {
		f(&o)
	}
	e, err := decision.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// answer is a Verdict's values, copied before Finish.
type answer struct {
	pass         bool
	status       int
	fields       map[string]string
	body         map[string]any
	client       string
	removed      []string
	method, path string
}

// decide decides req and finishes its Verdict as a refusal or a 200.
func decide(t *testing.T, e *decision.Engine, pol *policy.Compiled, req decision.Request) answer {
	t.Helper()
	return decideUnder(t, e, decision.Settings{Policy: pol}, req)
}

// decideUnder is decide under set.
func decideUnder(t *testing.T, e *decision.Engine, set decision.Settings, req decision.Request) answer {
	t.Helper()
	v := e.Decide(context.Background(), set, req)
	a := answer{pass: v.Pass, status: v.Status, fields: map[string]string{}, client: v.Client,
		removed: slices.Sorted(slices.Values(v.Removed)), method: v.Method, path: v.Path}
	for _, f := range v.Header {
		a.fields[f.Name] = string(f.Value)
	}
	if v.Body != nil {
		if err := json.Unmarshal(v.Body, &a.body); err != nil {
			t.Fatalf("body %q: %v", v.Body, err)
		}
	}
	if v.Pass {
		v.Finish(&decision.Response{Passed: true, Status: 200})
	} else {
		v.Finish(nil)
	}
	return a
}

func get(path string, h hdr) decision.Request {
	return decision.Request{Method: "GET", Path: path, Peer: netip.MustParseAddrPort("192.0.2.1:1234"), Header: h}
}

// Each answer of the DESIGN's "What a caller sees", as values.
func TestAnswers(t *testing.T) {
	pol := claims(t)
	e := engine(t, nil)
	pass := decide(t, e, pol, get("/claims/7", hdr{"X-Api-Key": {"key-a"}}))
	if !pass.pass || pass.status != 0 || pass.client != "partner-a" || pass.body != nil {
		t.Fatalf("first request: %+v, want a pass for partner-a", pass)
	}
	if got := pass.fields; got["Ratelimit-Policy"] != `"claims";q=1;w=60` || got["Ratelimit"] != `"claims";r=0;t=60` {
		t.Errorf("pass fields %v", got)
	}
	limited := decide(t, e, pol, get("/claims/7", hdr{"X-Api-Key": {"key-a"}}))
	if limited.pass || limited.status != 429 || limited.fields["Retry-After"] != "60" ||
		limited.fields["Content-Type"] != "application/problem+json" || limited.fields["Cache-Control"] != "no-store" {
		t.Fatalf("second request: %+v, want a 429 with Retry-After 60", limited)
	}
	if d := limited.body["detail"]; d != "partner-a exceeded 1 request per 1m (rule claims); retry in 60s" || limited.body["status"] != 429.0 {
		t.Errorf("429 body %v", limited.body)
	}
	for _, tc := range []struct {
		name   string
		req    decision.Request
		status int
		detail string
		field  [2]string
	}{
		{"no key", get("/claims", hdr{}), 401, "missing or unknown access key in X-API-Key", [2]string{"Www-Authenticate", `ApiKey header="X-API-Key"`}},
		{"unknown key", get("/claims", hdr{"X-Api-Key": {"nope"}}), 401, "missing or unknown access key in X-API-Key", [2]string{}},
		{"key twice", get("/claims", hdr{"X-Api-Key": {"key-a", "key-a"}}), 400, "X-API-Key sent 2 times (send one access key, once)", [2]string{}},
		{"key list", get("/claims", hdr{"X-Api-Key": {"key-a, key-b"}}), 400, "X-API-Key holds a list (send one access key)", [2]string{}},
		{"relative path", get("claims", hdr{"X-Api-Key": {"key-a"}}), 400, "the request path cannot be read one way only: it has no leading '/' (only absolute paths are served)", [2]string{}},
	} {
		a := decide(t, e, pol, tc.req)
		if a.pass || a.status != tc.status || a.body["status"] != float64(tc.status) || a.body["detail"] != tc.detail {
			t.Errorf("%s: %+v, want %d %q", tc.name, a, tc.status, tc.detail)
		}
		if tc.field[0] != "" && a.fields[tc.field[0]] != tc.field[1] {
			t.Errorf("%s: %s %q, want %q", tc.name, tc.field[0], a.fields[tc.field[0]], tc.field[1])
		}
	}
}

// brokenStore fails every decision.
type brokenStore struct{ store.Store }

func (brokenStore) DecideEach(context.Context, []store.Result, []store.Request, time.Time) ([]store.Result, error) {
	return nil, errors.New("store down")
}

func (brokenStore) DecideAll(context.Context, []store.Result, []store.Request, time.Time) ([]store.Result, error) {
	return nil, errors.New("store down")
}

// A store that cannot decide: 503 under fail-closed, a pass under
// fail-open, and the error in the Report either way.
func TestStoreDown(t *testing.T) {
	pol := claims(t)
	for _, tc := range []struct {
		on   store.FailurePolicy
		pass bool
	}{{store.FailOpen, true}, {store.FailClosed, false}} {
		var rep decision.Report
		e := engine(t, brokenStore{}, func(o *decision.Options) {
			o.OnFailure = tc.on
			o.OnDecision = func(_ *decision.Request, r *decision.Report) { rep = *r }
		})
		a := decide(t, e, pol, get("/claims", hdr{"X-Api-Key": {"key-a"}}))
		if a.pass != tc.pass || rep.Err == nil {
			t.Errorf("%v: %+v, report %+v", tc.on, a, rep)
		}
		if !tc.pass && (a.status != 503 || a.fields["Retry-After"] != "1") {
			t.Errorf("%v: %+v, want 503 with Retry-After 1", tc.on, a)
		}
	}
}

// What a caller must not pass on is listed in Removed, spelled as sent;
// the method and path go on cleaned.
func TestRemovedAndCleaned(t *testing.T) {
	pol := claims(t)
	e := engine(t, nil)
	a := decide(t, e, pol, decision.Request{Method: "get", Path: "/claims//7/../8", Header: hdr{
		"X-Api-Key": {"key-a"}, "X_api_key": {"key-b"}, "X-Sluice-Client": {"admin"}, "X_sluice_client": {"admin"},
		"X-Http-Method-Override": {"DELETE"}, "X-Original-Url": {"/admin"}, "Accept": {"*/*"}}})
	want := []string{"X-Http-Method-Override", "X-Original-Url", "X-Sluice-Client", "X_api_key", "X_sluice_client"}
	if !a.pass || !slices.Equal(a.removed, want) {
		t.Errorf("removed %q, want %q (%+v)", a.removed, want, a)
	}
	if a.method != "GET" || a.path != "/claims/8" {
		t.Errorf("cleaned to %s %s, want GET /claims/8", a.method, a.path)
	}
}

// countingLeaser counts releases.
type countingLeaser struct {
	store.Leaser
	released int
}

func (c *countingLeaser) Release(ctx context.Context, l store.Lease, now time.Time) error {
	c.released++
	return c.Leaser.Release(ctx, l, now)
}

// Finish runs the after steps once: the lease of a concurrency rule is
// held from Decide to Finish and given back then, once; OnResponse is
// told once; a second Finish panics rather than run another request's
// steps.
func TestFinishOnce(t *testing.T) {
	pol, err := policy.Compile(policy.Policy{Rules: []policy.Rule{{Name: "one-at-a-time", Key: policy.KeySpec{Kind: policy.KeyIP}, Concurrency: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	clk := clock.NewFake(epoch)
	mem := memory.New(memory.Options{Clock: clk})
	defer func() { _ = mem.Close() }()
	leaser := &countingLeaser{Leaser: mem}
	responses := 0
	e, err := decision.New(decision.Options{Store: mem, Leaser: leaser, Clock: clk,
		OnResponse: func(*decision.Request, *decision.Response) { responses++ }})
	if err != nil {
		t.Fatal(err)
	}
	set := decision.Settings{Policy: pol}
	first := e.Decide(context.Background(), set, get("/", nil))
	if !first.Pass || !first.NeedsResponse() {
		t.Fatalf("first: pass %v, needs response %v", first.Pass, first.NeedsResponse())
	}
	second := e.Decide(context.Background(), set, get("/", nil))
	if second.Pass || second.Status != 429 {
		t.Fatalf("second while the first holds the lease: pass %v status %d, want 429", second.Pass, second.Status)
	}
	second.Finish(nil)
	first.Finish(&decision.Response{Passed: true, Status: 200})
	if leaser.released != 1 || responses != 2 {
		t.Fatalf("released %d, responses %d; want 1 and 2", leaser.released, responses)
	}
	third := e.Decide(context.Background(), set, get("/", nil))
	if !third.Pass {
		t.Fatalf("third, after the first finished: status %d", third.Status)
	}
	third.Finish(&decision.Response{Passed: true, Status: 200})
	defer func() {
		if recover() == nil {
			t.Error("a second Finish did not panic")
		}
	}()
	third.Finish(nil)
}

// FuzzDecide: whatever the method, path, peer and fields, Decide does not
// panic and its Verdict is consistent: a pass has no status or body and a
// clean path; a refusal has one of the Engine's statuses and a
// problem+json body saying it; every removed name is one the request
// sent.
func FuzzDecide(f *testing.F) {
	f.Add("GET", "/claims/7", "192.0.2.1:1", "X-Api-Key", "key-a", "X_api_key", "x")
	f.Add("get", "/claims/%2e%2e/x", "[::1]:2", "X-Api-Key", "key-a, key-b", "X-Sluice-Client", "y")
	f.Add("", "", "", "", "", "", "")
	f.Add("POST", "claims", "garbage", "X-Forwarded-For", "1.2.3.4", "Forwarded", "for=x")
	pol := claims(f)
	e := engine(f, nil)
	f.Fuzz(func(t *testing.T, method, path, peer, k1, v1, k2, v2 string) {
		addr, _ := netip.ParseAddrPort(peer)
		h := hdr{k1: {v1}, k2: {v2}, "X-Api-Key": {"key-a"}}
		v := e.Decide(context.Background(), decision.Settings{Policy: pol, LegacyHeaders: true}, decision.Request{Method: method, Path: path, Peer: addr, Header: h})
		defer v.Finish(nil)
		for _, name := range v.Removed {
			if _, ok := h[name]; !ok {
				t.Errorf("removed %q, which was not sent", name)
			}
		}
		if v.Pass {
			if v.Status != 0 || v.Body != nil || !strings.HasPrefix(v.Path, "/") {
				t.Fatalf("pass with status %d, body %q, path %q", v.Status, v.Body, v.Path)
			}
			return
		}
		var body struct{ Status int }
		if err := json.Unmarshal(v.Body, &body); err != nil || body.Status != v.Status || !slices.Contains([]int{400, 401, 429, 503}, v.Status) {
			t.Fatalf("refusal %d with body %q (%v)", v.Status, v.Body, err)
		}
	})
}

// twice lists every name of its fields two times, as a transport may
// (Headers.Names need not make them unique).
type twice struct{ hdr }

func (h twice) Names(dst []string) []string {
	for _, n := range h.hdr.Names(nil) {
		dst = append(dst, n, n)
	}
	return dst
}

// A name listed more than once by Headers.Names is removed once.
func TestRemovedOnceWhenNamesRepeat(t *testing.T) {
	pol := claims(t)
	e := engine(t, nil)
	a := decide(t, e, pol, decision.Request{Method: "GET", Path: "/claims", Header: twice{hdr{
		"X-Api-Key": {"key-a"}, "X_api_key": {"key-b"}, "X-Sluice-Client": {"admin"}}}})
	want := []string{"X-Sluice-Client", "X_api_key"}
	if !a.pass || !slices.Equal(a.removed, want) {
		t.Errorf("removed %q, want %q (%+v)", a.removed, want, a)
	}
}
