package gateway_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/gateway"
)

// TestLoopAnswered508: a gateway whose upstream is its own address (a loop
// check cannot see: listen names another port) answers 508 once, instead
// of forwarding to itself until file descriptors run out. The connection
// cap and upstream timeout bound the damage if detection failed.
func TestLoopAnswered508(t *testing.T) {
	ln, adm := listen(t), listen(t)
	cfg := strings.Replace(serverConfig("  max_connections: 16\n  upstream_timeout: 2s\n"), "{{UPSTREAM}}", "http://"+ln.Addr().String(), 1)
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(gateway.Options{Config: file, Logger: slog.New(slog.NewJSONHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- g.Run(ctx, ln, adm) }()
	defer func() { cancel(); <-ran }()
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+"/claims/1", nil)
	req.Header.Set("X-API-Key", keyA)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusLoopDetected || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("status %d %q, want 508 problem+json", resp.StatusCode, body)
	}
	if v := resp.Header.Values("Sluice-Loop-Mark"); len(v) != 0 {
		t.Errorf("the caller saw the loop mark %q", v)
	}
}

// TestLoopMarkFromCallers: what a caller writes in the mark header gets no
// one a 508: guessed marks are forwarded (after being checked), junk is
// dropped, and the gateway's own mark never reaches the caller, even from
// an upstream that echoes request headers.
func TestLoopMarkFromCallers(t *testing.T) {
	var got []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Values("Sluice-Loop-Mark")
		for k, v := range r.Header {
			w.Header()[k] = v // an echoing upstream
		}
	}))
	defer up.Close()
	h := startGateway(t, strings.Replace(standardConfig, "{{UPSTREAM}}", up.URL, 1))
	guess := strings.Repeat("0f", 16)
	r := h.do(h.url, http.MethodGet, "/claims/1", map[string]string{"X-API-Key": keyA,
		"Sluice-Loop-Mark": "junk, " + guess + ", " + strings.Repeat("a", 5000)}, "")
	if r.Status != http.StatusOK {
		t.Fatalf("status %d %q, want 200", r.Status, r.Body)
	}
	if len(got) != 1 || !strings.HasPrefix(got[0], guess+", ") || len(got[0]) != 2*32+2 {
		t.Errorf("upstream got marks %q, want the caller's well-formed one, then the gateway's", got)
	}
	if v := r.Header.Values("Sluice-Loop-Mark"); len(v) != 0 {
		t.Errorf("the caller saw the loop mark %q", v)
	}
}
