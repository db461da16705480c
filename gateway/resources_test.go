package gateway_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// serverConfig is standardConfig with a server block: short timeouts, so
// that tests of them take well under a second each.
func serverConfig(settings string) string {
	return strings.Replace(standardConfig, "clients:\n", "server:\n"+settings+"clients:\n", 1)
}

// rawConn is a connection to the callers' side on which a test writes
// request bytes by hand.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func (h *harness) dial() *rawConn {
	h.t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { c.Close() })
	return &rawConn{t: h.t, c: c, br: bufio.NewReader(c)}
}

func (r *rawConn) write(s string) {
	r.t.Helper()
	if _, err := io.WriteString(r.c, s); err != nil {
		r.t.Fatalf("write: %v", err)
	}
}

// read reads one response within wait and returns it with its body read.
func (r *rawConn) read(wait time.Duration) (*http.Response, string, error) {
	_ = r.c.SetReadDeadline(time.Now().Add(wait))
	resp, err := http.ReadResponse(r.br, nil)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// mustRead reads one response within 5s and checks its status.
func (r *rawConn) mustRead(status int) *http.Response {
	r.t.Helper()
	resp, body, err := r.read(5 * time.Second)
	if err != nil {
		r.t.Fatalf("want %d: %v", status, err)
	}
	if resp.StatusCode != status {
		r.t.Fatalf("status %d %q, want %d", resp.StatusCode, body, status)
	}
	if ct := resp.Header.Get("Content-Type"); status >= 400 && ct != "application/problem+json" {
		r.t.Errorf("Content-Type %q, want application/problem+json", ct)
	}
	return resp
}

// closedAfter reports whether the server closes the connection (within 5s)
// without sending anything more.
func (r *rawConn) closedAfter() bool {
	_ = r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := r.br.Read(make([]byte, 1))
	return n == 0 && errors.Is(err, io.EOF)
}

// TestSlowBodyTimesOut: a body that does not arrive within
// server.body_timeout gets 408 and is the caller's failure, not the
// upstream's.
func TestSlowBodyTimesOut(t *testing.T) {
	h := startGateway(t, serverConfig("  body_timeout: 300ms\n"))
	c := h.dial()
	c.write("POST /submit HTTP/1.1\r\nHost: x\r\nX-API-Key: " + keyA + "\r\nContent-Length: 100\r\n\r\n0123456789")
	c.mustRead(http.StatusRequestTimeout)
	if !c.closedAfter() {
		t.Error("the connection stayed open after 408")
	}
	m := h.metrics()
	if got := metric(m, "sluice_caller_errors_total", "reason=body_timeout"); got != 1 {
		t.Errorf("sluice_caller_errors_total{reason=body_timeout} = %v, want 1", got)
	}
	if got := metric(m, "sluice_upstream_errors_total"); got != 0 {
		t.Errorf("sluice_upstream_errors_total = %v, want 0", got)
	}
}

// TestEarlyAnswerDoesNotWaitForBody: a request sluice answers itself (401
// here; 429 takes the same path) gets its answer at once, however slowly
// its body arrives, and the connection is closed rather than read on.
// net/http would otherwise read up to 256 KiB of the body first.
func TestEarlyAnswerDoesNotWaitForBody(t *testing.T) {
	h := startGateway(t, serverConfig("  body_timeout: 1m\n"))
	for name, req := range map[string]string{
		"content-length": "POST /submit HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nx",
		"chunked":        "POST /submit HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3e8\r\nx",
	} {
		t.Run(name, func(t *testing.T) {
			c := h.dial()
			c.t = t
			c.write(req)
			resp := c.mustRead(http.StatusUnauthorized)
			if !resp.Close {
				t.Error("401 without Connection: close")
			}
			if !c.closedAfter() {
				t.Error("the connection stayed open after 401")
			}
		})
	}
	if h.up.hits.Load() != 0 {
		t.Errorf("the upstream was reached %d times", h.up.hits.Load())
	}
}

// TestUpstreamTimeout: an upstream that accepts the request and never
// answers gets the caller 504 after server.upstream_timeout.
func TestUpstreamTimeout(t *testing.T) {
	release := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer up.Close()
	defer close(release)
	cfg := strings.Replace(serverConfig("  upstream_timeout: 200ms\n"), "{{UPSTREAM}}", up.URL, 1)
	h := startGateway(t, cfg)
	r := h.get("/claims/1", keyA)
	if r.Status != http.StatusGatewayTimeout || r.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("status %d %q, want 504 problem+json", r.Status, r.Body)
	}
	if got := metric(h.metrics(), "sluice_upstream_errors_total"); got != 1 {
		t.Errorf("sluice_upstream_errors_total = %v, want 1", got)
	}
}

// TestConnectionCap: beyond server.max_connections, a caller's connection
// waits (in the kernel's backlog) until another one closes.
func TestConnectionCap(t *testing.T) {
	h := startGateway(t, serverConfig("  max_connections: 2\n"))
	first, second := h.dial(), h.dial()
	first.write("GET /claims/1 HTTP/1.1\r\nHost: x\r\nX-API-Key: " + keyA + "\r\n\r\n")
	first.mustRead(http.StatusOK) // accepted and served
	second.write("GET /claims/2 HTTP/1.1\r\nHost: x\r\nX-API-Key: " + keyA + "\r\n\r\n")
	second.mustRead(http.StatusOK)
	third := h.dial() // the kernel completes the handshake; sluice does not accept it
	third.write("GET /claims/3 HTTP/1.1\r\nHost: x\r\nX-API-Key: " + keyA + "\r\n\r\n")
	if _, _, err := third.read(300 * time.Millisecond); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a third connection was served beyond max_connections 2 (err %v)", err)
	}
	first.c.Close()
	third.mustRead(http.StatusOK)
}

// TestMalformedChunkedBody: a broken chunked body is the caller's fault:
// 400, counted as such, not as an upstream error.
func TestMalformedChunkedBody(t *testing.T) {
	h := startGateway(t, standardConfig)
	c := h.dial()
	c.write("POST /submit HTTP/1.1\r\nHost: x\r\nX-API-Key: " + keyA + "\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nzz\r\n")
	c.mustRead(http.StatusBadRequest)
	m := h.metrics()
	if got := metric(m, "sluice_caller_errors_total", "reason=malformed_body"); got != 1 {
		t.Errorf("sluice_caller_errors_total{reason=malformed_body} = %v, want 1", got)
	}
	if got := metric(m, "sluice_upstream_errors_total"); got != 0 {
		t.Errorf("sluice_upstream_errors_total = %v, want 0", got)
	}
}

// TestCallerAbortIsNotUpstreamError: a caller that goes away mid-body is
// counted as an abort; the upstream's error count and its WARN log stay
// for the upstream's own failures. (A caller that goes away while the
// upstream works on a request without a body is noticed when its answer is
// written: the fast data path does not read a connection while its
// request is at the upstream.)
func TestCallerAbortIsNotUpstreamError(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done() // answers only when the gateway gives up
	}))
	defer up.Close()
	h := startGateway(t, strings.Replace(standardConfig, "{{UPSTREAM}}", up.URL, 1))
	c := h.dial()
	c.write("POST /submit HTTP/1.1\r\nHost: x\r\nX-API-Key: " + keyA + "\r\nContent-Length: 100\r\n\r\n0123456789")
	eventually(t, "the body to reach the upstream", func() bool { return metric(h.metrics(), "sluice_requests_total", "rule=submit") == 1 })
	c.c.Close()
	eventually(t, "the abort to be counted", func() bool {
		return metric(h.metrics(), "sluice_caller_errors_total", "reason=aborted") == 1
	})
	if got := metric(h.metrics(), "sluice_upstream_errors_total"); got != 0 {
		t.Errorf("sluice_upstream_errors_total = %v, want 0", got)
	}
	if n := h.logs.count(t, "upstream unreachable"); n != 0 {
		t.Errorf("%d 'upstream unreachable' log lines for callers that left", n)
	}
}

// TestProxyErrorsLogJSON: an upstream that breaks off its response body
// is logged in the gateway's JSON log, not in plain text on stderr.
func TestProxyErrorsLogJSON(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = io.WriteString(w, "only ten..")
		w.(http.Flusher).Flush()
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.Close()
		}
	}))
	defer up.Close()
	h := startGateway(t, strings.Replace(standardConfig, "{{UPSTREAM}}", up.URL, 1))
	c := h.dial()
	c.write("GET /claims/1 HTTP/1.1\r\nHost: x\r\nX-API-Key: " + keyA + "\r\n\r\n")
	_, _, _ = c.read(5 * time.Second) // the body breaks off
	eventually(t, "the proxy's error in the JSON log", func() bool {
		for _, l := range h.logs.lines(t) { // fails on a line that is not JSON
			if msg, _ := l["msg"].(string); msg == "answer body broke off" && l["level"] == "WARN" {
				return true
			}
		}
		return false
	})
}

// TestReloadKeepsServerSettings: the server block takes effect at start; a
// reload that changes it says so and keeps the timeouts in force.
func TestReloadKeepsServerSettings(t *testing.T) {
	h := startGateway(t, serverConfig("  body_timeout: 300ms\n"))
	h.writeConfig(serverConfig("  body_timeout: 1m\n"))
	if err := h.g.Reload(); err != nil {
		t.Fatal(err)
	}
	if n := h.logs.count(t, "listen, admin, server, store, runtime and access_log changes take effect after a restart"); n != 1 {
		t.Errorf("%d restart warnings, want 1", n)
	}
	c := h.dial()
	c.write("POST /submit HTTP/1.1\r\nHost: x\r\nX-API-Key: " + keyA + "\r\nContent-Length: 100\r\n\r\n0123456789")
	c.mustRead(http.StatusRequestTimeout) // still 300ms
}

// TestSlowUpstreamAfterBody: body_timeout bounds the body only. Once the
// body is in, an upstream slower than body_timeout (within
// upstream_timeout) still gets its answer to the caller: net/http clears
// the read deadline when the body ends, for its own read that watches for
// the caller leaving, so the deadline never cancels the request.
func TestSlowUpstreamAfterBody(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		time.Sleep(700 * time.Millisecond) // the slow upstream under test: over body_timeout
		_, _ = io.WriteString(w, "done")
	}))
	defer up.Close()
	h := startGateway(t, strings.Replace(serverConfig("  body_timeout: 300ms\n"), "{{UPSTREAM}}", up.URL, 1))
	r := h.do(h.url, http.MethodPost, "/submit", map[string]string{"X-API-Key": keyA}, "a body")
	if r.Status != http.StatusOK || r.Body != "done" {
		t.Errorf("status %d %q, want 200 done", r.Status, r.Body)
	}
}

// TestLimitedSlowBodyGets429: a caller over its limit gets its 429 at once
// however slowly its body arrives, like the 401 of
// TestEarlyAnswerDoesNotWaitForBody.
func TestLimitedSlowBodyGets429(t *testing.T) {
	cfg := strings.Replace(serverConfig("  body_timeout: 1m\n"),
		"match: { path: /submit }\n    algorithm: fixed_window\n    rate: 100/m", "match: { path: /submit }\n    algorithm: fixed_window\n    rate: 1/m", 1)
	h := startGateway(t, cfg)
	if r := h.do(h.url, http.MethodPost, "/submit", map[string]string{"X-API-Key": keyA}, "first"); r.Status != http.StatusOK {
		t.Fatalf("first POST: %d %s", r.Status, r.Body)
	}
	c := h.dial()
	c.write("POST /submit HTTP/1.1\r\nHost: x\r\nX-API-Key: " + keyA + "\r\nContent-Length: 1000\r\n\r\nx")
	if resp := c.mustRead(http.StatusTooManyRequests); !resp.Close {
		t.Error("429 without Connection: close")
	}
	if !c.closedAfter() {
		t.Error("the connection stayed open after 429")
	}
}
