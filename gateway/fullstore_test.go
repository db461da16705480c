package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fullStoreConfig counts tenants by header and clients by id, 3/m each, in
// a memory store of 300 keys. partner-a and partner-b are listed clients;
// anyone else is anonymous, counted by the address its trusted proxy
// (127.0.0.1, the test) names.
const fullStoreConfig = `listen: 127.0.0.1:18080
upstream: {{UPSTREAM}}
admin: 127.0.0.1:18090
trusted_proxies: [127.0.0.1]
store:
  memory: { max_keys: 300 }
  on_failure: %s
clients:
  unknown: anonymous
  list:
    - id: partner-a
      keys: [` + keyA + `]
    - id: partner-b
      keys: [` + keyB + `]
rules:
  - name: tenants
    match: { path: /tenants }
    key: header:X-Tenant
    algorithm: fixed_window
    rate: 3/m
  - name: claims
    match: { path: /claims }
    key: client
    algorithm: fixed_window
    rate: 3/m
`

// TestFullStoreLiftsNoLimit floods the memory store with more tenants than
// it has room for, each spending its whole limit (so that every key is
// being limited), and then checks that nobody passes a limit: not a new
// tenant, not a new anonymous address, not a listed client that had no
// counter yet, and not one whose counter existed before the flood. Under
// on_failure open and closed alike, nothing is a store error.
func TestFullStoreLiftsNoLimit(t *testing.T) {
	for _, mode := range []string{"open", "closed"} {
		t.Run(mode, func(t *testing.T) {
			h := startGateway(t, fmt.Sprintf(fullStoreConfig, mode))
			if r := h.get("/claims", keyB); r.Status != http.StatusOK {
				t.Fatalf("partner-b's first request: %d %s", r.Status, r.Body)
			}
			h.floodTenants(1200, 3)

			passed := func(n int, path string, hdr map[string]string) int {
				ok := 0
				for range n {
					r := h.do(h.url, http.MethodGet, path, hdr, "")
					switch r.Status {
					case http.StatusOK:
						ok++
					case http.StatusTooManyRequests:
					default:
						t.Fatalf("GET %s %v: %d %s", path, hdr, r.Status, r.Body)
					}
				}
				return ok
			}
			if got := passed(4, "/tenants", map[string]string{"X-Tenant": "new-tenant", "X-Forwarded-For": "198.51.100.1"}); got > 3 {
				t.Errorf("a new tenant passed %d of 4 requests at 3/m", got)
			}
			if got := passed(4, "/claims", map[string]string{"X-Forwarded-For": "203.0.113.7"}); got > 3 {
				t.Errorf("a new anonymous address passed %d of 4 requests at 3/m", got)
			}
			if got := passed(4, "/claims", map[string]string{"X-API-Key": keyA}); got != 3 {
				t.Errorf("partner-a (no counter before the flood) passed %d of 4 requests at 3/m, want 3", got)
			}
			if got := passed(3, "/claims", map[string]string{"X-API-Key": keyB}); got != 2 {
				t.Errorf("partner-b (1 spent before the flood) passed %d of 3 requests at 3/m, want 2", got)
			}
			m := h.metrics()
			if n := metric(m, "sluice_requests_total", "decision=store_error"); n > 0 {
				t.Errorf("%v decisions were store errors, want none", n)
			}
			if n := metric(m, "sluice_store_errors_total"); n != 0 {
				t.Errorf("sluice_store_errors_total = %v, want 0", n)
			}
		})
	}
}

// TestFullLogStoreLiftsNoLimit is TestFullStoreLiftsNoLimit for sliding_log
// entries: the flood fills store.memory.max_log_entries (10000) with
// limited tenants' logs, after which a new tenant is counted on the
// tenants rule's overflow counter, which the flood has spent, while the
// listed clients keep their own logs. The flood's 10200 requests are sent
// one after another, a millisecond apart on the gateway's clock, so that
// each is an entry of its own.
func TestFullLogStoreLiftsNoLimit(t *testing.T) {
	cfg := strings.Replace(fmt.Sprintf(fullStoreConfig, "closed"), "memory: { max_keys: 300 }", "memory: { max_log_entries: 10000 }", 1)
	cfg = strings.ReplaceAll(cfg, "algorithm: fixed_window", "algorithm: sliding_log")
	h := startGateway(t, cfg)
	if r := h.get("/claims", keyB); r.Status != http.StatusOK {
		t.Fatalf("partner-b's first request: %d %s", r.Status, r.Body)
	}
	for i := range 3400 {
		hdr := map[string]string{"X-Tenant": "tenant-" + strconv.Itoa(i), "X-Forwarded-For": "192.0.2.1"}
		for range 3 {
			h.clock.Advance(time.Millisecond)
			r := h.do(h.url, http.MethodGet, "/tenants", hdr, "")
			if r.Status != http.StatusOK && r.Status != http.StatusTooManyRequests {
				t.Fatalf("flood: %d %s", r.Status, r.Body)
			}
		}
	}
	count := func(n int, path string, hdr map[string]string) int {
		ok := 0
		for range n {
			if r := h.do(h.url, http.MethodGet, path, hdr, ""); r.Status == http.StatusOK {
				ok++
			} else if r.Status != http.StatusTooManyRequests {
				t.Fatalf("GET %s %v: %d %s", path, hdr, r.Status, r.Body)
			}
		}
		return ok
	}
	if got := count(4, "/tenants", map[string]string{"X-Tenant": "new-tenant", "X-Forwarded-For": "198.51.100.1"}); got != 0 {
		t.Errorf("a new tenant passed %d of 4 requests; want 0 (counted on the overflow counter the flood spent)", got)
	}
	if got := count(4, "/claims", map[string]string{"X-API-Key": keyA}); got != 3 {
		t.Errorf("partner-a passed %d of 4 requests at 3/m, want 3", got)
	}
	if got := count(3, "/claims", map[string]string{"X-API-Key": keyB}); got != 2 {
		t.Errorf("partner-b (1 spent before the flood) passed %d of 3 requests at 3/m, want 2", got)
	}
	if n := metric(h.metrics(), "sluice_store_errors_total"); n != 0 {
		t.Errorf("sluice_store_errors_total = %v, want 0", n)
	}
}

// floodTenants sends each of n tenants' each requests to /tenants from the
// anonymous address 198.51.100.1, on four connections at once.
func (h *harness) floodTenants(n, each int) {
	h.t.Helper()
	var wg sync.WaitGroup
	errs := make(chan string, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := w; i < n; i += 4 {
				hdr := map[string]string{"X-Tenant": "tenant-" + strconv.Itoa(i), "X-Forwarded-For": "198.51.100.1"}
				for range each {
					if r := h.doQuiet(http.MethodGet, "/tenants", hdr); r != "" {
						errs <- r
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	var all []string
	for e := range errs {
		all = append(all, e)
	}
	if len(all) > 0 {
		h.t.Fatalf("flood: %s", strings.Join(all, "; "))
	}
}

// doQuiet sends a request from any goroutine and returns what went wrong
// ("" when it was answered 200, 429 or 503).
func (h *harness) doQuiet(method, path string, header map[string]string) string {
	req, err := http.NewRequest(method, h.url+path, nil)
	if err != nil {
		return err.Error()
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := h.client.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	switch resp.StatusCode {
	case http.StatusOK, http.StatusTooManyRequests, http.StatusServiceUnavailable:
		return ""
	}
	return method + " " + path + ": " + resp.Status
}
