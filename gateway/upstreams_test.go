package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// services are the test's upstreams by name, each counting what reached it.
type services map[string]*upstream

func (s services) counts() map[string]int {
	out := map[string]int{}
	for name, u := range s {
		out[name] = u.count()
	}
	return out
}

// severalConfig routes by host, path and a wildcard host, with no service
// for the rest (404).
const severalConfig = `listen: 127.0.0.1:18080
upstreams:
  - name: claims
    match: {host: claims.example.com}
    url: {{UPSTREAM}}
  - name: reports
    match: {path: /reports}
    url: {{REPORTS}}
  - name: partners
    match: {host: "*.partners.example"}
    url: {{PARTNERS}}
rules:
  - name: all
    rate: 1000/m
`

func startSeveral(t *testing.T, cfg string) (*harness, services) {
	t.Helper()
	h := newHarness(t)
	svc := services{"claims": h.up, "reports": newUpstream(t), "partners": newUpstream(t)}
	cfg = strings.ReplaceAll(cfg, "{{REPORTS}}", svc["reports"].srv.URL)
	cfg = strings.ReplaceAll(cfg, "{{PARTNERS}}", svc["partners"].srv.URL)
	h.writeConfig(cfg)
	h.serve()
	return h, svc
}

// rawOne sends raw, one request written as given, on a connection of its
// own and returns the answer's status and body.
func rawOne(t *testing.T, addr, raw string) (int, string) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(addr, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestUpstreamsRouting: each request goes to the first service whose match
// fits, by the host it is for (any case, with a port or a trailing dot; the
// authority of an absolute-form target over Host) and its cleaned path; a
// request no service matches is answered 404 and reaches none.
func TestUpstreamsRouting(t *testing.T) {
	h, svc := startSeveral(t, severalConfig)
	for _, tc := range []struct {
		name, line, host string
		want             string // the service reached; "" for none (404)
	}{
		{"exact host", "GET /claims/1", "claims.example.com", "claims"},
		{"host in capitals, with a port", "GET /claims/1", "CLAIMS.Example.COM:8080", "claims"},
		{"host with a trailing dot", "GET /claims/1", "claims.example.com.", "claims"},
		{"the first match wins", "GET /reports/1", "claims.example.com", "claims"},
		{"path prefix", "GET /reports/7", "other.example", "reports"},
		{"path prefix itself", "GET /reports", "other.example", "reports"},
		{"path prefix, cleaned", "GET //reports/./7", "other.example", "reports"},
		{"path prefix, percent-encoded letter", "GET /%72eports/7", "other.example", "reports"},
		{"not on a segment boundary", "GET /reportsx", "other.example", ""},
		{"wildcard host", "GET /a", "garage-a.partners.example", "partners"},
		{"wildcard host, two labels below", "GET /a", "x.garage-a.partners.example", "partners"},
		{"wildcard host is not the bare name", "GET /a", "partners.example", ""},
		{"wildcard host is a label boundary", "GET /a", "evilpartners.example", ""},
		{"no service", "GET /claims/1", "other.example", ""},
		{"absolute form with its Host", "GET http://claims.example.com/x", "claims.example.com", "claims"},
		{"absolute form, unrouted", "GET http://other.example/x", "other.example", ""},
		{"absolute form naming another host than Host", "GET http://claims.example.com/x", "other.example", "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := svc.counts()
			status, body := rawOne(t, h.url, tc.line+" HTTP/1.1\r\nHost: "+tc.host+"\r\nConnection: close\r\n\r\n")
			after := svc.counts()
			for name := range svc {
				reached := after[name] - before[name]
				if want := map[bool]int{true: 1}[name == tc.want]; reached != want {
					t.Errorf("%s reached %s %d times, want %d (answer %d %q)", tc.line, name, reached, want, status, body)
				}
			}
			if tc.want == "refused" && status != http.StatusBadRequest {
				t.Errorf("status %d %q, want 400", status, body)
			}
			if tc.want == "" && status != http.StatusNotFound {
				t.Errorf("status %d %q, want 404", status, body)
			}
			if tc.want != "" && tc.want != "refused" && status != http.StatusOK {
				t.Errorf("status %d %q, want 200", status, body)
			}
		})
	}
	m := h.metrics()
	if got := metric(m, "sluice_unrouted_total"); got != 5 {
		t.Errorf("sluice_unrouted_total = %v, want 5", got)
	}
	if got := metric(m, "sluice_upstream_responses_total", "upstream=claims", "code=200"); got != 5 {
		t.Errorf(`sluice_upstream_responses_total{upstream="claims"} = %v, want 5`, got)
	}
	if got := metric(m, "sluice_upstream_responses_total", "upstream=reports"); got != 4 {
		t.Errorf(`sluice_upstream_responses_total{upstream="reports"} = %v, want 4`, got)
	}
	if got := metric(m, "sluice_requests_total"); got != 11 {
		t.Errorf("sluice_requests_total = %v, want 11: the unrouted and refused requests are counted by no rule", got)
	}
}

// TestUpstreamsCatchAll: an entry without match takes what the others do
// not.
func TestUpstreamsCatchAll(t *testing.T) {
	cfg := strings.Replace(severalConfig, "  - name: partners\n    match: {host: \"*.partners.example\"}\n", "  - name: partners\n", 1)
	h, svc := startSeveral(t, cfg)
	if status, body := rawOne(t, h.url, "GET /anything HTTP/1.1\r\nHost: other.example\r\nConnection: close\r\n\r\n"); status != http.StatusOK {
		t.Fatalf("status %d %q, want 200 from the catch-all", status, body)
	}
	if got := svc.counts(); got["partners"] != 1 || got["claims"] != 0 || got["reports"] != 0 {
		t.Errorf("reached %v, want partners only", got)
	}
}

// blockingService answers /slow only once released, counting those at it.
type blockingService struct {
	srv     *httptest.Server
	at      atomic.Int64
	release chan struct{}
}

func newBlockingService(t *testing.T) *blockingService {
	b := &blockingService{release: make(chan struct{})}
	b.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/reports/slow" {
			b.at.Add(1)
			defer b.at.Add(-1)
			select {
			case <-b.release:
			case <-r.Context().Done():
			}
		}
		_, _ = io.WriteString(w, "reports "+r.URL.Path)
	}))
	t.Cleanup(b.srv.Close)
	t.Cleanup(func() { close(b.release) })
	return b
}

// TestUpstreamsOwnTimeoutAndProtect: a slow reports service runs into its
// own timeout (504) and fills its own in-flight ceiling (503), while claims,
// under the file's protect block with a throttle of its own, answers.
func TestUpstreamsOwnTimeoutAndProtect(t *testing.T) {
	h := newHarness(t)
	h.realClock = true
	reports := newBlockingService(t)
	h.writeConfig(`listen: 127.0.0.1:18080
protect: {max_in_flight: 1}
upstreams:
  - name: claims
    match: {host: claims.example.com}
    url: {{UPSTREAM}}
  - name: reports
    match: {path: /reports}
    url: ` + reports.srv.URL + `
    timeout: 2s
    protect: {max_in_flight: 1}
rules:
  - name: all
    rate: 1000/m
`)
	h.serve()
	slow := make(chan int, 1)
	go func() {
		status, _ := rawOne(t, h.url, "GET /reports/slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		slow <- status
	}()
	eventually(t, "a reports request at the service", func() bool { return reports.at.Load() == 1 })
	if status, body := rawOne(t, h.url, "GET /reports/2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); status != http.StatusServiceUnavailable {
		t.Errorf("a second reports request: %d %q, want 503 (reports' ceiling is 1)", status, body)
	}
	for i := range 3 {
		if status, body := rawOne(t, h.url, "GET /claims/1 HTTP/1.1\r\nHost: claims.example.com\r\nConnection: close\r\n\r\n"); status != http.StatusOK {
			t.Fatalf("claims request %d while reports is full: %d %q, want 200", i, status, body)
		}
	}
	m := h.metrics()
	if metric(m, "sluice_in_flight", "upstream=reports") != 1 || metric(m, "sluice_in_flight", "upstream=claims") != 0 {
		t.Errorf("sluice_in_flight reports %v, claims %v; want 1, 0", metric(m, "sluice_in_flight", "upstream=reports"),
			metric(m, "sluice_in_flight", "upstream=claims"))
	}
	if got := metric(m, "sluice_shed_total", "upstream=claims"); got != 0 {
		t.Errorf(`sluice_shed_total{upstream="claims"} = %v, want 0`, got)
	}
	select { // reports' own timeout, 2s
	case status := <-slow:
		if status != http.StatusGatewayTimeout {
			t.Errorf("the slow reports request: %d, want 504 after reports' timeout", status)
		}
	case <-time.After(8 * time.Second):
		t.Fatal("the slow reports request outlived its service's timeout")
	}
	if got := metric(h.metrics(), "sluice_upstream_errors_total", "upstream=reports"); got != 1 {
		t.Errorf(`sluice_upstream_errors_total{upstream="reports"} = %v, want 1`, got)
	}
}

// TestUpstreamsReload: a reload that moves a service sends its requests to
// the new URL at once; the others go on.
func TestUpstreamsReload(t *testing.T) {
	h, svc := startSeveral(t, severalConfig)
	moved := newUpstream(t)
	h.writeConfig(strings.Replace(strings.ReplaceAll(strings.ReplaceAll(severalConfig, "{{REPORTS}}", moved.srv.URL),
		"{{PARTNERS}}", svc["partners"].srv.URL), "name: reports", "name: reports-v2", 1))
	if r := h.admin(http.MethodPost, "/reload"); r.Status != http.StatusOK {
		t.Fatalf("reload: %d %s", r.Status, r.Body)
	}
	if status, _ := rawOne(t, h.url, "GET /reports/1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	if status, _ := rawOne(t, h.url, "GET /a HTTP/1.1\r\nHost: claims.example.com\r\nConnection: close\r\n\r\n"); status != http.StatusOK {
		t.Fatalf("status %d", status)
	}
	if moved.count() != 1 || svc["reports"].count() != 0 || svc["claims"].count() != 1 {
		t.Errorf("reached moved %d, old reports %d, claims %d; want 1, 0, 1", moved.count(), svc["reports"].count(), svc["claims"].count())
	}
	if got := metric(h.metrics(), "sluice_upstream_responses_total", "upstream=reports-v2"); got != 1 {
		t.Errorf(`sluice_upstream_responses_total{upstream="reports-v2"} = %v, want 1`, got)
	}
}
