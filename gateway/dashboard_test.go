package gateway_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// The dashboard is served from the binary with a policy that keeps it to
// its own files, loads nothing from elsewhere (it works offline), and is
// open without the token (it holds no data: the overview asks for it).
func TestDashboardServed(t *testing.T) {
	h := startGateway(t, `listen: 127.0.0.1:8080
upstream: {{UPSTREAM}}
admin: { listen: 127.0.0.1:9090, token: s3cret-admin-token }
rules:
  - name: all
    match: { path: / }
    key: ip
    rate: 10/m
`)
	external := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|url\(\s*["']?(https?:)?//|https?://`)
	for path, typ := range map[string]string{"/": "text/html", "/dashboard/app.js": "text/javascript", "/dashboard/style.css": "text/css"} {
		resp, err := h.client.Get(h.adminURL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), typ) {
			t.Errorf("GET %s: %d %q, want 200 %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), typ)
		}
		csp := resp.Header.Get("Content-Security-Policy")
		for _, want := range []string{"default-src 'none'", "script-src 'self'", "connect-src 'self'", "frame-ancestors 'none'"} {
			if !strings.Contains(csp, want) {
				t.Errorf("GET %s: Content-Security-Policy %q lacks %s", path, csp, want)
			}
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: X-Frame-Options %q, X-Content-Type-Options %q", path, resp.Header.Get("X-Frame-Options"), resp.Header.Get("X-Content-Type-Options"))
		}
		// The SVG namespace is a name, not a resource.
		if m := external.FindString(strings.ReplaceAll(string(body), `"http://www.w3.org/2000/svg"`, "")); m != "" {
			t.Errorf("GET %s loads from elsewhere: %q", path, m)
		}
		if strings.Contains(string(body), "innerHTML") {
			t.Errorf("GET %s writes markup (innerHTML): every value must go in as text", path)
		}
	}
	for _, path := range []string{"/dashboard/", "/dashboard/index.html.bak", "/dashboard/../admin.go", "/index.html", "/x"} {
		resp, err := h.client.Get(h.adminURL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", path, resp.StatusCode)
		}
	}
}
