package gateway_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// concurrencyConfig is the claims story with an in-flight rule: at most 10
// of a partner's requests at the upstream at once. {{SLOW}} is the slow
// upstream's URL.
const concurrencyConfig = `listen: 127.0.0.1:18080
upstream: {{SLOW}}
admin: 127.0.0.1:18090
clients:
  list:
    - {id: partner-a, keys: [` + keyA + `]}
    - {id: partner-b, keys: [` + keyB + `]}
rules:
  - name: claims
    match: { path: /claims }
    rate: 1000/m
  - name: partner-in-flight
    match: { path: /claims }
    concurrency: 10
`

// slowUpstream holds every request until let go, counting those it holds.
type slowUpstream struct {
	srv     *httptest.Server
	entered chan string // the X-Sluice-Client of each request it holds
	mu      sync.Mutex
	gate    chan struct{}
}

func newSlowUpstream(t *testing.T) *slowUpstream {
	u := &slowUpstream{entered: make(chan string, 100), gate: make(chan struct{})}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		gate := u.gate
		u.mu.Unlock()
		u.entered <- r.Header.Get("X-Sluice-Client")
		<-gate
		_, _ = w.Write([]byte("claim"))
	}))
	t.Cleanup(u.srv.Close)
	t.Cleanup(u.letGo) // before Close, which waits for the held requests
	return u
}

// letGo lets every held request, and every later one, through.
func (u *slowUpstream) letGo() {
	u.mu.Lock()
	defer u.mu.Unlock()
	select {
	case <-u.gate:
	default:
		close(u.gate)
	}
}

// waitHeld waits until n more requests are held.
func (u *slowUpstream) waitHeld(t *testing.T, n int) {
	t.Helper()
	receiveN(t, u.entered, n, 10*time.Second, "a request never reached the upstream")
}

// The 11th concurrent request of one partner gets 429 with the
// concurrent-requests headers; another partner is unaffected; once the
// responses are written the slots are back.
func TestConcurrencyRuleThroughTheGateway(t *testing.T) {
	slow := newSlowUpstream(t)
	h := startGateway(t, strings.ReplaceAll(concurrencyConfig, "{{SLOW}}", slow.srv.URL))
	var wg sync.WaitGroup
	codes := make(chan int, 11)
	send := func(key string) {
		wg.Go(func() { codes <- h.get("/claims", key).Status })
	}
	for range 10 {
		send(keyA)
	}
	slow.waitHeld(t, 10)

	r := h.get("/claims", keyA)
	if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") != "1" {
		t.Fatalf("11th request: %d, Retry-After %q; want 429, 1", r.Status, r.Header.Get("Retry-After"))
	}
	if got, want := r.Header.Get("RateLimit-Policy"), `"claims";q=1000;w=60, "partner-in-flight";q=10;qu="concurrent-requests"`; got != want {
		t.Errorf("RateLimit-Policy %q, want %q", got, want)
	}
	if got := r.Header.Get("RateLimit"); !strings.HasSuffix(got, `, "partner-in-flight";r=0`) {
		t.Errorf("RateLimit %q, want partner-in-flight r=0", got)
	}
	var p struct {
		Detail           string   `json:"detail"`
		ViolatedPolicies []string `json:"violated-policies"`
	}
	if err := json.Unmarshal([]byte(r.Body), &p); err != nil || r.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("body %q: %v", r.Body, err)
	}
	if p.Detail != "partner-a exceeded 10 requests in flight (rule partner-in-flight); retry in 1s" || len(p.ViolatedPolicies) != 1 {
		t.Errorf("problem %+v", p)
	}

	send(keyB) // partner-b is unaffected: it reaches the upstream
	slow.waitHeld(t, 1)
	slow.letGo()
	wg.Wait()
	close(codes)
	for c := range codes {
		if c != http.StatusOK {
			t.Errorf("a held request answered %d, want 200", c)
		}
	}
	// The slots are back once the responses are written (the release
	// follows the response by a moment: poll for it).
	eventually(t, "partner-a's 10 slots back", func() bool {
		r := h.get("/claims", keyA)
		return r.Status == http.StatusOK && strings.HasSuffix(r.Header.Get("RateLimit"), `"partner-in-flight";r=9`)
	})
	m := h.metrics()
	if v := metric(m, "sluice_requests_total", "rule=partner-in-flight", "client=partner-a", "decision=limited"); v != 1 {
		t.Errorf("partner-in-flight limited partner-a %v times in the metrics, want 1", v)
	}
	if v := metric(m, "sluice_requests_total", "rule=partner-in-flight", "client=partner-b", "decision=allowed"); v != 1 {
		t.Errorf("partner-in-flight allowed partner-b %v times in the metrics, want 1", v)
	}
}

// A request in flight longer than the lease TTL keeps its slot: the
// gateway renews its leases on its own clock (here the fake one), every
// third of store.lease_ttl, and counts the renewals.
func TestLongRequestKeepsItsSlot(t *testing.T) {
	slow := newSlowUpstream(t)
	cfg := strings.ReplaceAll(concurrencyConfig, "{{SLOW}}", slow.srv.URL)
	cfg = strings.Replace(cfg, "concurrency: 10", "concurrency: 1", 1) + "store: {lease_ttl: 30s}\n"
	h := startGateway(t, cfg)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer slow.letGo()
	wg.Go(func() { _ = h.get("/claims", keyA) })
	slow.waitHeld(t, 1)
	renewed := func(want float64) func() bool {
		return func() bool {
			return metric(h.metrics(), "sluice_lease_renewals_total", "result=renewed") == want
		}
	}
	h.clock.Advance(10 * time.Second) // a renewal is due
	eventually(t, "one lease renewed", renewed(1))
	h.clock.Advance(25 * time.Second) // past the first TTL, within the renewed one
	eventually(t, "the lease renewed again", renewed(2))
	if r := h.get("/claims", keyA); r.Status != http.StatusTooManyRequests {
		t.Errorf("35s into a request with a 30s lease TTL a second one got %d, want 429: the slot is still held", r.Status)
	}
}
