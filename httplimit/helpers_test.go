package httplimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/internal/redistest"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
	"github.com/sluice-rl/sluice/store/redis"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// epoch is where every fake clock starts: aligned on seconds, minutes and
// hours, so window boundaries in the tables are easy to read.
var epoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// countingStore wraps a real store, records every key it is asked about and
// can be told to fail.
type countingStore struct {
	store.Store
	mu    sync.Mutex
	calls int         // Decide, DecideEach and DecideAll calls
	keys  []store.Key // every key asked, in order
	// err, if set, is returned by DecideEach and DecideAll instead of deciding.
	err error
	// resultErr, if set, is the Err of every result instead of a decision.
	resultErr error
	// short makes DecideEach and DecideAll return one result too few.
	short bool
}

func (s *countingStore) Decide(ctx context.Context, key store.Key, l limiter.Limit, now time.Time, cost int64) (limiter.Decision, error) {
	s.mu.Lock()
	s.calls++
	s.keys = append(s.keys, key)
	s.mu.Unlock()
	return s.Store.Decide(ctx, key, l, now, cost)
}

func (s *countingStore) DecideEach(ctx context.Context, _ []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	return s.decide(ctx, reqs, now, s.Store.DecideEach)
}

func (s *countingStore) DecideAll(ctx context.Context, _ []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	return s.decide(ctx, reqs, now, s.Store.DecideAll)
}

// decide is DecideEach and DecideAll: one call of the real store's
// method, counted, its keys recorded, failing as told.
func (s *countingStore) decide(ctx context.Context, reqs []store.Request, now time.Time,
	method func(context.Context, []store.Result, []store.Request, time.Time) ([]store.Result, error)) ([]store.Result, error) {
	s.mu.Lock()
	s.calls++
	for _, r := range reqs {
		s.keys = append(s.keys, r.Key)
	}
	err, resultErr, short := s.err, s.resultErr, s.short
	s.mu.Unlock()
	switch {
	case err != nil:
		return nil, err
	case resultErr != nil:
		res := make([]store.Result, len(reqs))
		for i := range res {
			res[i].Err = resultErr
		}
		return res, nil
	}
	res, e := method(ctx, nil, reqs, now)
	if short && len(res) > 0 {
		res = res[:len(res)-1]
	}
	return res, e
}

func (s *countingStore) stats() (calls int, keys []store.Key) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls, slices.Clone(s.keys)
}

// lastKey returns the last key the store was asked about, "" if none.
func (s *countingStore) lastKey() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.keys) == 0 {
		return ""
	}
	return s.keys[len(s.keys)-1].String()
}

func (s *countingStore) fail(err error) {
	s.mu.Lock()
	s.err = err
	s.mu.Unlock()
}

// seenReport is a copy of one OnDecision report and of what the request
// looked like when it was made.
type seenReport struct {
	httplimit.Report
	clientHeader []string // X-Sluice-Client of the request during the call
}

// harness is a Limiter in front of a recording handler, on a fake clock and
// a counting memory store.
type harness struct {
	t       *testing.T
	clock   *clock.Fake
	store   *countingStore
	mem     *memory.Store
	lim     *httplimit.Limiter
	handler http.Handler

	mu      sync.Mutex
	served  int
	clients [][]string // X-Sluice-Client seen by the handler, per served request
	reports []seenReport
}

// newHarness builds a harness for p; opt may change the Options before New.
func newHarness(t *testing.T, p policy.Policy, opt ...func(*httplimit.Options)) *harness {
	t.Helper()
	h := &harness{t: t, clock: clock.NewFake(epoch)}
	h.mem = memory.New(memory.Options{Clock: h.clock})
	t.Cleanup(func() { _ = h.mem.Close() })
	h.store = &countingStore{Store: h.mem}
	opts := httplimit.Options{
		Policy: compile(t, p),
		Store:  h.store,
		Clock:  h.clock,
		OnDecision: func(r *http.Request, rep *httplimit.Report) {
			cp := seenReport{Report: *rep, clientHeader: slices.Clone(r.Header.Values(httplimit.ClientHeader))}
			cp.Rules = slices.Clone(rep.Rules)
			h.mu.Lock()
			h.reports = append(h.reports, cp)
			h.mu.Unlock()
		},
	}
	for _, o := range opt {
		o(&opts)
	}
	lim, err := httplimit.New(opts)
	if err != nil {
		t.Fatalf("httplimit.New: %v", err)
	}
	h.lim = lim
	h.handler = lim.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.served++
		h.clients = append(h.clients, slices.Clone(r.Header.Values(httplimit.ClientHeader)))
		h.mu.Unlock()
		_, _ = w.Write([]byte("ok"))
	}))
	return h
}

func compile(t testing.TB, p policy.Policy) *policy.Compiled {
	t.Helper()
	c, err := policy.Compile(p)
	if err != nil {
		t.Fatalf("policy.Compile: %v", err)
	}
	return c
}

// req describes one request; empty fields take defaults (GET /claims from
// 192.0.2.1:1234).
type req struct {
	method string
	path   string
	remote string
	key    string // X-API-Key, if not empty
	header http.Header
}

func (h *harness) do(q req) *httptest.ResponseRecorder {
	h.t.Helper()
	if q.method == "" {
		q.method = http.MethodGet
	}
	if q.path == "" {
		q.path = "/claims"
	}
	r := httptest.NewRequest(q.method, "http://sluice.test"+q.path, nil)
	if q.remote != "" {
		r.RemoteAddr = q.remote
	}
	for k, v := range q.header {
		r.Header[k] = slices.Clone(v)
	}
	if q.key != "" {
		r.Header.Set("X-API-Key", q.key)
	}
	w := httptest.NewRecorder()
	h.handler.ServeHTTP(w, r)
	return w
}

// get sends GET path with key from the default address.
func (h *harness) get(path, key string) *httptest.ResponseRecorder {
	h.t.Helper()
	return h.do(req{path: path, key: key})
}

func (h *harness) servedCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.served
}

func (h *harness) lastReport() seenReport {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.reports) == 0 {
		h.t.Fatal("no report")
	}
	return h.reports[len(h.reports)-1]
}

func (h *harness) reportCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.reports)
}

// lastClient returns the X-Sluice-Client values the handler saw last.
func (h *harness) lastClient() []string {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.clients) == 0 {
		h.t.Fatal("handler never called")
	}
	return h.clients[len(h.clients)-1]
}

// keyOf makes request q and returns the store key it was counted under.
func (h *harness) keyOf(q req) string {
	h.t.Helper()
	before, _ := h.store.stats()
	if w := h.do(q); w.Code != http.StatusOK {
		h.t.Fatalf("%+v: status %d, want 200", q, w.Code)
	}
	after, _ := h.store.stats()
	if after != before+1 {
		h.t.Fatalf("%+v: store called %d times, want 1", q, after-before)
	}
	return h.store.lastKey()
}

// wantStatus fails the test unless w has status code want.
func wantStatus(t *testing.T, w *httptest.ResponseRecorder, want int, what string) {
	t.Helper()
	if w.Code != want {
		t.Fatalf("%s: status %d, want %d (body %q)", what, w.Code, want, w.Body.String())
	}
}

// problemBody is an RFC 9457 problem as sluice writes it.
type problemBody struct {
	Type             string   `json:"type"`
	Title            string   `json:"title"`
	Status           int      `json:"status"`
	Detail           string   `json:"detail"`
	ViolatedPolicies []string `json:"violated-policies"`
}

// readProblem checks that w is a problem+json answer with status and
// returns its body.
func readProblem(t *testing.T, w *httptest.ResponseRecorder, status int) problemBody {
	t.Helper()
	wantStatus(t, w, status, "problem")
	if ct := w.Header().Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q, want no-store", cc)
	}
	if cl := w.Header().Get("Content-Length"); cl != strconv.Itoa(w.Body.Len()) {
		t.Errorf("Content-Length %q, body is %d bytes", cl, w.Body.Len())
	}
	var p problemBody
	dec := json.NewDecoder(w.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		t.Fatalf("problem body: %v", err)
	}
	if p.Status != status {
		t.Errorf("problem status %d, want %d", p.Status, status)
	}
	if p.Title != http.StatusText(status) {
		t.Errorf("problem title %q, want %q", p.Title, http.StatusText(status))
	}
	return p
}

// retryAfter returns the Retry-After of w in seconds, failing if it is not
// a positive whole number.
func retryAfter(t *testing.T, w *httptest.ResponseRecorder) int64 {
	t.Helper()
	v := w.Header().Values("Retry-After")
	if len(v) != 1 {
		t.Fatalf("Retry-After %q, want one value", v)
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil || n < 1 {
		t.Fatalf("Retry-After %q is not a whole number of seconds >= 1", v[0])
	}
	return n
}

var errStoreDown = errors.New("connection refused")

// Policies used across the tests.

func rate(n int64, period time.Duration) policy.Rate { return policy.Rate{N: n, Period: period} }

// partners is the claims scenario of DESIGN.md with small numbers: claims
// allows 3/m by default, plan large 5/m, assessor-c's own 4/m beats its
// plan large.
func partners() policy.Policy {
	return policy.Policy{
		Clients: policy.Clients{List: []policy.Client{
			{ID: "partner-a", Keys: []string{"key-a"}, Plan: "standard"},
			{ID: "partner-b", Keys: []string{"key-b"}, Plan: "large"},
			{ID: "assessor-c", Keys: []string{"key-c"}, Plan: "large", Limits: map[string]policy.Rate{"claims": rate(4, time.Minute)}},
		}},
		Plans: map[string]policy.Plan{
			"standard": {},
			"large":    {Limits: map[string]policy.Rate{"claims": rate(5, time.Minute)}},
		},
		Rules: []policy.Rule{{
			Name:      "claims",
			Match:     policy.Match{Path: "/claims", Methods: []string{"GET"}},
			Algorithm: limiter.FixedWindow,
			Rate:      rate(3, time.Minute),
		}},
	}
}

// byIP is one rule counting every path by caller IP at n per minute.
func byIP(n int64) policy.Policy {
	return policy.Policy{Rules: []policy.Rule{{
		Name: "per-ip", Key: policy.KeySpec{Kind: policy.KeyIP},
		Algorithm: limiter.FixedWindow, Rate: rate(n, time.Minute),
	}}}
}

// newRedisStore returns a Redis store on the server at addr, with a key
// prefix of its own and the caller's clock (CallerTime), closed when the
// test ends. Its Timeout is an upper bound for a loaded machine.
func newRedisStore(t *testing.T, addr string) *redis.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := redis.New(ctx, redis.Options{Addrs: []string{addr}, Prefix: redistest.KeyPrefix(t),
		CallerTime: true, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
