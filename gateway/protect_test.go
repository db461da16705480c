package gateway_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// heldUpstream is a service that counts the requests it holds at once and
// keeps those on /hold until release is closed.
type heldUpstream struct {
	srv      *httptest.Server
	inFlight atomic.Int64
	maxSeen  atomic.Int64
	hits     atomic.Int64
	entered  chan string // the path of each request as it arrives
	release  chan struct{}
	service  time.Duration // how long every other request takes
}

func newHeldUpstream(t *testing.T, service time.Duration) *heldUpstream {
	u := &heldUpstream{entered: make(chan string, 1024), release: make(chan struct{}), service: service}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := u.inFlight.Add(1)
		defer u.inFlight.Add(-1)
		for m := u.maxSeen.Load(); n > m && !u.maxSeen.CompareAndSwap(m, n); m = u.maxSeen.Load() {
		}
		u.hits.Add(1)
		u.entered <- r.URL.Path
		if strings.HasPrefix(r.URL.Path, "/hold") {
			<-u.release
		} else if u.service > 0 {
			time.Sleep(u.service) // the service's work, not synchronisation
		}
		_, _ = io.WriteString(w, "upstream ok")
	}))
	t.Cleanup(u.srv.Close)
	t.Cleanup(u.releaseAll)
	return u
}

var releaseOnce sync.Mutex

func (u *heldUpstream) releaseAll() {
	releaseOnce.Lock()
	defer releaseOnce.Unlock()
	select {
	case <-u.release:
	default:
		close(u.release)
	}
}

// fetch sends GET path with headers and returns status, Retry-After and
// body; safe from any goroutine.
func fetch(c *http.Client, url string, header map[string]string) (int, string, string, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, "", "", err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), string(b), err
}

func protectConfig(upstream, protect string) string {
	return `listen: 127.0.0.1:18080
upstream: ` + upstream + `
admin: 127.0.0.1:18090
` + protect + `
clients:
  unknown: anonymous
  list:
    - {id: partner-a, keys: [` + keyA + `]}
    - {id: partner-b, keys: [` + keyB + `]}
rules:
  - name: claims
    match: { path: /claims }
    priority: critical
  - name: reports
    match: { path: /reports }
    priority: low
  - name: export
    match: { path: /export }
    priority: high
    degrade: true
  - name: everything
    key: ip
    rate: 1000000/s
`
}

// max_in_flight is never exceeded at the upstream under three times the
// load it admits; every request is answered 200 after waiting its turn.
func TestProtectCeilingUnderLoad(t *testing.T) {
	up := newHeldUpstream(t, 2*time.Millisecond)
	h := newHarness(t)
	h.writeConfig(protectConfig(up.srv.URL, "protect: {max_in_flight: 4, queue: {max_wait: 1m, max_length: 100}}"))
	h.serve()
	const callers, each = 12, 10
	var wg sync.WaitGroup
	errs := make(chan string, callers*each)
	for c := range callers {
		wg.Go(func() {
			for range each {
				status, _, body, err := fetch(h.client, h.url+"/work/"+strconv.Itoa(c), nil)
				if err != nil || status != http.StatusOK {
					errs <- strconv.Itoa(status) + " " + body + " " + errString(err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Errorf("a request failed: %s", e)
	}
	if got := up.maxSeen.Load(); got > 4 || got < 1 {
		t.Errorf("the upstream saw %d requests at once, want at most max_in_flight 4", got)
	}
	if got := up.hits.Load(); got != callers*each {
		t.Errorf("the upstream saw %d requests, want %d", got, callers*each)
	}
	m := h.metrics()
	if metric(m, "sluice_in_flight_limit") != 4 || metric(m, "sluice_in_flight") != 0 || metric(m, "sluice_queue_length") != 0 ||
		metric(m, "sluice_in_flight_ceiling") != 4 || metric(m, "sluice_shedding") != 0 {
		t.Errorf("metrics: in flight %v, limit %v, ceiling %v, queue %v, shedding %v; want 0, 4, 4, 0, 0 once answered",
			metric(m, "sluice_in_flight"), metric(m, "sluice_in_flight_limit"), metric(m, "sluice_in_flight_ceiling"),
			metric(m, "sluice_queue_length"), metric(m, "sluice_shedding"))
	}
	if got := metric(m, "sluice_upstream_responses_total", "code=200"); got != callers*each {
		t.Errorf("sluice_upstream_responses_total{code=200} %v, want %d", got, callers*each)
	}
	if got := metric(m, "sluice_queue_wait_seconds_count"); got != callers*each {
		t.Errorf("sluice_queue_wait_seconds_count %v, want one per admitted request (%d)", got, callers*each)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// At the limit, low requests are shed and degrade requests refused at once
// while a critical one waits in the queue and passes when a slot frees.
func TestProtectCriticalPassesWhileLowShed(t *testing.T) {
	up := newHeldUpstream(t, 0)
	h := newHarness(t)
	h.writeConfig(protectConfig(up.srv.URL, "protect: {max_in_flight: 2, queue: {max_wait: 1m, max_length: 10}, shed_from: 0.5}"))
	h.serve()
	held := make(chan int, 2)
	for range 2 {
		go func() {
			status, _, _, _ := fetch(h.client, h.url+"/hold", nil)
			held <- status
		}()
		<-up.entered
	}
	critical := make(chan int, 1)
	go func() {
		status, _, _, _ := fetch(h.client, h.url+"/claims/7", map[string]string{"X-API-Key": keyA})
		critical <- status
	}()
	eventually(t, "the critical request queued", func() bool { return metric(h.metrics(), "sluice_queue_length") == 1 })
	for _, tc := range []struct{ path, reason string }{{"/reports", "shed"}, {"/export", "degraded"}, {"/reports/2", "shed"}} {
		status, retry, body, err := fetch(h.client, h.url+tc.path, map[string]string{"X-API-Key": keyB})
		var p struct {
			Reason string `json:"reason"`
		}
		_ = json.Unmarshal([]byte(body), &p)
		if err != nil || status != http.StatusServiceUnavailable || p.Reason != tc.reason || retry == "" {
			t.Errorf("%s: %d Retry-After %q %s (%v), want 503 %s with Retry-After", tc.path, status, retry, body, err, tc.reason)
		}
	}
	h.clock.Advance(time.Second) // the shedding watch looks once a second
	eventually(t, "shedding started logged", func() bool {
		return h.logs.count(t, "shedding started: low-priority requests are refused and degrade rules switched off") == 1
	})
	if got := metric(h.metrics(), "sluice_shedding"); got != 1 {
		t.Errorf("sluice_shedding %v while low requests are shed, want 1", got)
	}
	up.releaseAll()
	if s := <-critical; s != http.StatusOK {
		t.Errorf("the critical request: %d, want 200 once a slot freed", s)
	}
	for range 2 {
		if s := <-held; s != http.StatusOK {
			t.Errorf("a held request: %d, want 200", s)
		}
	}
	m := h.metrics()
	if metric(m, "sluice_shed_total", "priority=low", "reason=shed") != 2 || metric(m, "sluice_shed_total", "priority=high", "reason=degraded") != 1 ||
		metric(m, "sluice_shed_total", "priority=critical") != 0 {
		t.Errorf("sluice_shed_total: low shed %v, high degraded %v, critical %v; want 2, 1, 0",
			metric(m, "sluice_shed_total", "priority=low", "reason=shed"), metric(m, "sluice_shed_total", "priority=high", "reason=degraded"),
			metric(m, "sluice_shed_total", "priority=critical"))
	}
	h.clock.Advance(time.Second)
	eventually(t, "shedding ended logged", func() bool { return h.logs.count(t, "shedding ended") == 1 })
	h.clock.Advance(time.Second)
	if n := h.logs.count(t, "shedding started: low-priority requests are refused and degrade rules switched off"); n != 1 {
		t.Errorf("shedding started logged %d times, want once", n)
	}
	if up.hits.Load() != 3 {
		t.Errorf("the upstream saw %d requests, want 3 (the refused never reach it)", up.hits.Load())
	}
}

// The upstream's 503 with Retry-After goes to its caller unchanged, and
// holds the non-critical requests after it (answered by sluice, never
// reaching the upstream); critical ones still pass. Its 429 holds only the
// caller it answered.
func TestProtectUpstreamBackoff(t *testing.T) {
	h := newHarness(t)
	h.writeConfig(strings.Replace(protectConfig("{{UPSTREAM}}", "protect: {max_in_flight: 10, upstream_backoff: true}"),
		"  - name: claims\n    match: { path: /claims }", "  - name: claims\n    match: { path: /claims/critical }", 1))
	h.serve()
	r := h.get("/upstream-429", keyA)
	if r.Status != 429 || r.Header.Get("Retry-After") != "7" || r.Body != "upstream says slow down\n" {
		t.Fatalf("upstream 429: %d %q %q, want it unchanged", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
	hits := h.up.hits.Load()
	if r := h.get("/claims/1", keyA); r.Status != 503 || !strings.Contains(r.Body, `"reason":"upstream_backoff"`) {
		t.Errorf("partner-a after its upstream 429: %d %s, want sluice's 503 upstream_backoff", r.Status, r.Body)
	}
	if r := h.get("/claims/1", keyB); r.Status != 200 {
		t.Errorf("partner-b after partner-a's upstream 429: %d, want 200 (the 429 holds only its caller)", r.Status)
	}
	r = h.get("/upstream-503", keyB)
	if r.Status != 503 || r.Header.Get("Retry-After") != "120" || r.Body != `{"upstream":"overloaded"}` {
		t.Fatalf("upstream 503: %d %q %q, want it unchanged", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
	hits = h.up.hits.Load()
	r = h.get("/claims/2", keyB)
	if r.Status != 503 || !strings.Contains(r.Body, `"reason":"upstream_backoff"`) || r.Header.Get("Retry-After") != "60" {
		t.Errorf("after the upstream's 503: %d Retry-After %q %s, want sluice's 503 upstream_backoff, Retry-After 60 (the hold is capped at a minute)", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
	if h.up.hits.Load() != hits {
		t.Error("a held request reached the upstream")
	}
	if r := h.get("/claims/critical", keyB); r.Status != 200 {
		t.Errorf("a critical request during the hold: %d, want 200", r.Status)
	}
	if got := metric(h.metrics(), "sluice_upstream_responses_total", "code=503"); got != 1 {
		t.Errorf("sluice_upstream_responses_total{code=503} %v, want 1 (sluice's own 503s are not the upstream's)", got)
	}
}

// protect takes effect on reload, on the same Throttle: a request in
// flight keeps its slot across the reload and counts against the new
// limit.
func TestProtectReload(t *testing.T) {
	up := newHeldUpstream(t, 0)
	h := newHarness(t)
	h.writeConfig(protectConfig(up.srv.URL, ""))
	h.serve()
	if m := h.metrics(); metric(m, "sluice_in_flight") != -1 {
		t.Error("sluice_in_flight reported without protect")
	}
	h.writeConfig(protectConfig(up.srv.URL, "protect: {max_in_flight: 2}"))
	if err := h.g.Reload(); err != nil {
		t.Fatal(err)
	}
	held := make(chan int, 1)
	go func() {
		status, _, _, _ := fetch(h.client, h.url+"/hold", nil)
		held <- status
	}()
	<-up.entered
	h.writeConfig(protectConfig(up.srv.URL, "protect: {max_in_flight: 1}"))
	if err := h.g.Reload(); err != nil {
		t.Fatal(err)
	}
	if status, retry, body, _ := fetch(h.client, h.url+"/work", nil); status != 503 || retry == "" || !strings.Contains(body, `"reason":"queue_full"`) {
		t.Errorf("at the reloaded limit 1 with one in flight: %d %q %s, want 503 queue_full", status, retry, body)
	}
	h.writeConfig(protectConfig(up.srv.URL, ""))
	if err := h.g.Reload(); err != nil {
		t.Fatal(err)
	}
	if status, _, _, _ := fetch(h.client, h.url+"/work", nil); status != 200 {
		t.Errorf("protect removed: %d, want 200", status)
	}
	up.releaseAll()
	if s := <-held; s != 200 {
		t.Errorf("the held request: %d, want 200", s)
	}
}
