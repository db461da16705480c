package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// chromiumBinary returns Debian's chromium, failing the test (never
// skipping it) when there is none: make test installs it.
func chromiumBinary(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Fatal("chromium not found: the dashboard's test renders it in a real browser (make test installs it: apt-get install chromium)")
	return ""
}

// renderDashboard loads url in headless chromium, lets its script run for
// a few (virtual) seconds, and returns the page as rendered; with shot
// set, it also saves a screenshot there.
func renderDashboard(t *testing.T, url, shot string) string {
	t.Helper()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=4000", "--window-size=1100,900", "--hide-scrollbars"}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, chromiumBinary(t), append(args, "--dump-dom", url)...).Output()
	if err != nil {
		t.Fatalf("chromium --dump-dom %s: %v", url, err)
	}
	if shot != "" {
		if b, err := exec.CommandContext(ctx, chromiumBinary(t), append(args, "--screenshot="+shot, url)...).CombinedOutput(); err != nil {
			t.Fatalf("chromium --screenshot: %v\n%s", err, b)
		}
	}
	return string(out)
}

const dashboardConfig = `listen: 127.0.0.1:0
admin: ADMIN
upstream: UPSTREAM
clients:
  list:
    - { id: partner-a, keys: [dash-key-a] }
    - { id: partner-b, keys: [dash-key-b] }
rules:
  - name: claims
    match: { path: /claims, methods: [GET] }
    key: client
    algorithm: sliding_log
    rate: 10/m
`

// The dashboard, in a real browser against a live sluice serve with
// traffic: partner-a floods and is limited, retrying before its
// Retry-After; partner-b has used 9 of its 10; the page shows the one
// limited, the other close, and the finding. With admin.token set, the
// page asks for it and shows nothing before.
func TestDashboardInBrowser(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer up.Close()
	cfg := strings.NewReplacer("ADMIN", "127.0.0.1:0", "UPSTREAM", up.URL).Replace(dashboardConfig)
	p := startServe(t, writeFile(t, "sluice.yaml", cfg))
	c := &http.Client{Timeout: 10 * time.Second}
	for range 40 {
		fetch(t, c, "GET", "http://"+p.listen+"/claims/1", "dash-key-a")
	}
	for range 9 {
		fetch(t, c, "GET", "http://"+p.listen+"/claims/2", "dash-key-b")
	}
	overview := "http://" + p.admin + "/api/v1/overview"
	poll(t, "the overview's retries_too_soon finding", func() bool {
		resp, err := c.Get(overview)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		var o struct{ Findings []struct{ Kind string } }
		if json.NewDecoder(resp.Body).Decode(&o) != nil {
			return false
		}
		for _, f := range o.Findings {
			if f.Kind == "retries_too_soon" {
				return true
			}
		}
		return false
	})
	shot := filepath.Join(t.TempDir(), "dashboard.png")
	dom := renderDashboard(t, "http://"+p.admin+"/", shot)
	for _, want := range []string{
		`data-client="partner-a" data-state="limited"`,
		`data-client="partner-b" data-state="close"`,
		`data-kind="retries_too_soon"`,
		`partner-a (limited)`,
		`partner-b (close)`,
	} {
		if !strings.Contains(dom, want) {
			t.Errorf("the rendered dashboard lacks %s", want)
		}
	}
	if regexp.MustCompile(`<main id="view" hidden`).MatchString(dom) {
		t.Error("the rendered dashboard hides its view")
	}
	if strings.Contains(dom, "dash-key-a") || strings.Contains(dom, "dash-key-b") {
		t.Error("the rendered dashboard shows an access key")
	}
	if fi, err := os.Stat(shot); err != nil || fi.Size() < 10_000 {
		t.Errorf("screenshot %s: %v (%v bytes)", shot, err, fi)
	}
	if t.Failed() {
		t.Logf("rendered page:\n%s", dom)
	}
}

func TestDashboardAsksForToken(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) }))
	defer up.Close()
	cfg := strings.NewReplacer("ADMIN", "{ listen: 127.0.0.1:0, token: dash-admin-token-7 }", "UPSTREAM", up.URL).Replace(dashboardConfig)
	p := startServe(t, writeFile(t, "sluice.yaml", cfg))
	c := &http.Client{Timeout: 10 * time.Second}
	for range 12 {
		fetch(t, c, "GET", "http://"+p.listen+"/claims/1", "dash-key-a")
	}
	dom := renderDashboard(t, "http://"+p.admin+"/", "")
	if !strings.Contains(dom, `<form id="login">`) || !strings.Contains(dom, `<main id="view" hidden`) {
		t.Errorf("with admin.token the dashboard does not ask for it first:\n%s", dom)
	}
	if strings.Contains(dom, "partner-a") {
		t.Errorf("the dashboard shows data before the token was given:\n%s", dom)
	}
}
