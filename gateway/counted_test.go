package gateway_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// rawResponse sends req as bytes on a new connection and returns the
// first response's status and body.
func (h *harness) rawResponse(req string) (int, string) {
	h.t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() { _, _ = io.WriteString(c, req) }()
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		h.t.Fatalf("reading the response: %v", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

const tenantConfig = `listen: 127.0.0.1:18080
upstream: {{UPSTREAM}}
admin: 127.0.0.1:18090
rules:
  - name: tenants
    key: header:X-Tenant
    algorithm: fixed_window
    rate: 1/m
`

// A header:NAME rule's 429 and its log line name the header and its
// value; a value with bytes a log line must not carry (obs-text, a tab,
// as a raw request can send them) is shown as a fingerprint only.
func TestLimitedHeaderValueNamedSafely(t *testing.T) {
	h := startGateway(t, tenantConfig)
	for _, c := range []struct {
		value, want string
	}{
		{"acme", `header X-Tenant "acme" exceeded 1 request per 1m (rule tenants)`},
		{"ac\xffme\tlevel=ERROR", "header X-Tenant sha256:"},
	} {
		req := "GET /x HTTP/1.1\r\nHost: x\r\nX-Tenant: " + c.value + "\r\n\r\n"
		if status, body := h.rawResponse(req); status != http.StatusOK {
			t.Fatalf("%q first: %d %s", c.value, status, body)
		}
		h.clock.Advance(time.Second) // a log line per client and second
		status, body := h.rawResponse(req)
		var p struct{ Detail string }
		if err := json.Unmarshal([]byte(body), &p); status != http.StatusTooManyRequests || err != nil || !strings.HasPrefix(p.Detail, c.want) {
			t.Errorf("%q: %d %s, want 429 with a detail starting %q", c.value, status, body, c.want)
		}
		if strings.Contains(p.Detail, "level=ERROR") {
			t.Errorf("%q: detail %q carries part of the value", c.value, p.Detail)
		}
		found := false
		for _, l := range h.logs.lines(t) {
			if l["msg"] == "client limited" && strings.HasPrefix(p.Detail, fmt.Sprint(l["counted"])+" exceeded") {
				found = true
			}
		}
		if !found {
			t.Errorf("%q: no \"client limited\" log line with counted %q:\n%s", c.value, p.Detail, h.logs.String())
		}
	}
	if logs := h.logs.String(); strings.Contains(logs, "level=ERROR") || strings.Contains(logs, "\xff") {
		t.Errorf("the logs carry the raw header value:\n%s", logs)
	}
}
