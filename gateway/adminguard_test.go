package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"
)

// rawAdmin writes req as bytes to the admin listener and returns the
// status code and body of the response.
func (h *harness) rawAdmin(req string) (int, string) {
	h.t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(h.adminURL, "http://"))
	if err != nil {
		h.t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		h.t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		h.t.Fatalf("no response to %q: %v", req, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// adminHostPort is the admin listener's address, as a Host header writes it.
func (h *harness) adminHostPort() string { return strings.TrimPrefix(h.adminURL, "http://") }

// TestAdminRefusesBrowsers: a web page open on the operator's machine can
// make the browser POST to the admin port (a "simple" request needs no
// preflight), or rebind its own DNS name to 127.0.0.1; neither reloads,
// and neither reads /metrics. Requests written by hand, as a browser sends
// them.
func TestAdminRefusesBrowsers(t *testing.T) {
	h := startGateway(t, standardConfig)
	adm := h.adminHostPort()
	_, port, _ := net.SplitHostPort(adm)
	cases := []struct {
		name, req string
		want      int
	}{
		{"cross-site simple POST (Origin)", "POST /reload HTTP/1.1\r\nHost: " + adm + "\r\nOrigin: http://evil.example\r\n" +
			"Content-Type: text/plain\r\nContent-Length: 1\r\n\r\nx", 403},
		{"cross-site POST (Sec-Fetch-Site)", "POST /reload HTTP/1.1\r\nHost: " + adm + "\r\nSec-Fetch-Site: cross-site\r\n" +
			"Content-Type: text/plain\r\nContent-Length: 0\r\n\r\n", 403},
		{"same-site POST from another port", "POST /reload HTTP/1.1\r\nHost: " + adm + "\r\nSec-Fetch-Site: same-site\r\n" +
			"Origin: http://127.0.0.1:1\r\nContent-Length: 0\r\n\r\n", 403},
		{"DNS rebinding POST", "POST /reload HTTP/1.1\r\nHost: evil.example:" + port + "\r\nOrigin: http://evil.example:" + port + "\r\n" +
			"Sec-Fetch-Site: same-origin\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n", 403},
		{"cross-site counter reset (Origin)", "DELETE /api/v1/keys?rule=claims&client=partner-a HTTP/1.1\r\nHost: " + adm + "\r\nOrigin: http://evil.example\r\n\r\n", 403},
		{"cross-site counter reset (Sec-Fetch-Site)", "DELETE /api/v1/keys?rule=claims&client=partner-a HTTP/1.1\r\nHost: " + adm + "\r\nSec-Fetch-Site: cross-site\r\n\r\n", 403},
		{"DNS rebinding counter read", "GET /api/v1/keys?rule=claims&client=partner-a HTTP/1.1\r\nHost: evil.example:" + port + "\r\n\r\n", 403},
		{"DNS rebinding explain", "GET /api/v1/explain?path=/claims HTTP/1.1\r\nHost: evil.example:" + port + "\r\n\r\n", 403},
		{"DNS rebinding metrics", "GET /metrics HTTP/1.1\r\nHost: evil.example:" + port + "\r\nSec-Fetch-Site: same-origin\r\n\r\n", 403},
		{"DNS rebinding metrics, trailing dot", "GET /metrics HTTP/1.1\r\nHost: localhost.evil.example.:" + port + "\r\n\r\n", 403},
		{"DNS rebinding overview (issue 16: who is limited, the findings)", "GET /api/v1/overview HTTP/1.1\r\nHost: evil.example:" + port + "\r\nSec-Fetch-Site: same-origin\r\n\r\n", 403},
	}
	for _, c := range cases {
		if got, body := h.rawAdmin(c.req); got != c.want {
			t.Errorf("%s: status %d, want %d (%s)", c.name, got, c.want, body)
		}
	}
	if n := h.logs.count(t, "configuration reloaded"); n != 0 {
		t.Fatalf("%d reloads, want none", n)
	}
	// What operators and scrapers send still works.
	for _, host := range []string{adm, "localhost:" + port, "[::1]:" + port} {
		if got, body := h.rawAdmin("POST /reload HTTP/1.1\r\nHost: " + host + "\r\nContent-Length: 0\r\n\r\n"); got != 200 {
			t.Errorf("curl-like POST /reload with Host %s: status %d, want 200 (%s)", host, got, body)
		}
	}
	if got, body := h.rawAdmin("POST /reload HTTP/1.1\r\nHost: " + adm + "\r\nOrigin: http://" + adm + "\r\nSec-Fetch-Site: same-origin\r\nContent-Length: 0\r\n\r\n"); got != 200 {
		t.Errorf("same-origin POST /reload: status %d, want 200 (%s)", got, body)
	}
	if got, _ := h.rawAdmin("GET /metrics HTTP/1.1\r\nHost: " + adm + "\r\n\r\n"); got != 200 {
		t.Errorf("GET /metrics: status %d, want 200", got)
	}
	if got, _ := h.rawAdmin("GET /healthz HTTP/1.1\r\nHost: lb.internal\r\n\r\n"); got != 200 {
		t.Errorf("GET /healthz with a name as Host: status %d, want 200", got)
	}
}

const tokenConfig = `listen: 127.0.0.1:18080
upstream: {{UPSTREAM}}
admin: { listen: 0.0.0.0:18090, token: env:SLUICE_TEST_ADMIN_TOKEN }
rules:
  - name: api
    rate: 100/m
`

// TestAdminToken: with admin.token set, POST /reload, GET /metrics and
// GET /api/v1/overview need it as a bearer token, from any Host; /healthz and /readyz do not.
func TestAdminToken(t *testing.T) {
	const token = "admin-token-5d1f0c2e9a"
	t.Setenv("SLUICE_TEST_ADMIN_TOKEN", token)
	h := startGateway(t, tokenConfig)
	adm := h.adminHostPort()
	for _, c := range []struct {
		name, auth string
		want       int
	}{
		{"no token", "", 401},
		{"wrong token", "Authorization: Bearer admin-token-5d1f0c2e9b\r\n", 401},
		{"token prefix", "Authorization: Bearer admin-token\r\n", 401},
		{"token without scheme", "Authorization: " + token + "\r\n", 401},
		{"basic", "Authorization: Basic " + token + "\r\n", 401},
		{"right token", "Authorization: Bearer " + token + "\r\n", 200},
		// The scheme is case-insensitive (RFC 9110 section 11.1).
		{"scheme in lower case", "Authorization: bearer " + token + "\r\n", 200},
		{"scheme in upper case", "Authorization: BEARER " + token + "\r\n", 200},
	} {
		for _, req := range []string{"POST /reload HTTP/1.1\r\nHost: " + adm + "\r\nContent-Length: 0\r\n",
			"GET /metrics HTTP/1.1\r\nHost: sluice.internal\r\n", "GET /api/v1/overview HTTP/1.1\r\nHost: sluice.internal\r\n",
			"GET /api/v1/explain?path=/x HTTP/1.1\r\nHost: sluice.internal\r\n",
			"GET /api/v1/keys?rule=api&counted=192.0.2.1 HTTP/1.1\r\nHost: sluice.internal\r\n",
			"DELETE /api/v1/keys?rule=api&counted=192.0.2.1 HTTP/1.1\r\nHost: sluice.internal\r\n"} {
			if got, body := h.rawAdmin(req + c.auth + "\r\n"); got != c.want {
				t.Errorf("%s: %q: status %d, want %d (%s)", c.name, strings.SplitN(req, "\r\n", 2)[0], got, c.want, body)
			}
		}
	}
	if n := h.logs.count(t, "configuration reloaded"); n != 3 {
		t.Errorf("%d reloads, want 3 (the ones with the token)", n)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if got, _ := h.rawAdmin("GET " + path + " HTTP/1.1\r\nHost: " + adm + "\r\n\r\n"); got != 200 {
			t.Errorf("GET %s without token: status %d, want 200", path, got)
		}
	}
	if strings.Contains(h.logs.String(), token) {
		t.Error("the admin token appears in the logs")
	}
}

// TestConfigWarningsLogged: serve logs each configuration warning as JSON,
// with its position, at start and again on every reload.
func TestConfigWarningsLogged(t *testing.T) {
	h := startGateway(t, strings.Replace(standardConfig, "admin: 127.0.0.1:18090", "admin: 0.0.0.0:18090\ntrusted_proxies: [0.0.0.0/0]", 1))
	check := func(when string, want int) {
		t.Helper()
		var n int
		for _, l := range h.logs.lines(t) {
			if l["msg"] != "configuration warning" {
				continue
			}
			n++
			if l["level"] != "WARN" || l["line"] == nil || l["col"] == nil || !strings.HasSuffix(l["file"].(string), "sluice.yaml") {
				t.Errorf("%s: warning logged as %v", when, l)
			}
		}
		if n != want {
			t.Errorf("%s: %d warnings logged, want %d:\n%s", when, n, want, h.logs.String())
		}
	}
	check("at start", 2)
	if r := h.admin(http.MethodPost, "/reload"); r.Status != 200 {
		t.Fatalf("reload: %d %s", r.Status, r.Body)
	}
	check("after a reload", 4)
}

// TestBuildInfoMetric: /metrics names the running build.
func TestBuildInfoMetric(t *testing.T) {
	h := startGateway(t, standardConfig)
	if got := metric(h.metrics(), "sluice_build_info", "goversion="+runtime.Version()); got != 1 {
		t.Errorf("sluice_build_info{goversion=%q} = %v, want 1", runtime.Version(), got)
	}
}
