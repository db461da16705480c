package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeAccessLog: `sluice serve` with an access_log block writes a
// line per request, the last of them on SIGTERM, with the request id the
// caller got back and never the access key.
func TestServeAccessLog(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "id %s", r.Header.Get("X-Request-Id"))
	}))
	t.Cleanup(up.Close)
	dir := t.TempDir()
	path := filepath.Join(dir, "sluice.yaml")
	replace(t, path, serveConfigText(up.URL, "100/m")+"access_log: {path: access.log}\n")
	p := startServe(t, path)
	c := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	var ids []string
	for _, key := range []string{"cmd-secret-key-a-91c2", "wrong-key"} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+p.listen+"/claims/7?q=1", nil)
		req.Header.Set("X-API-Key", key)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		ids = append(ids, resp.Header.Get("X-Request-Id"))
	}
	c.CloseIdleConnections()
	p.terminate(t, 5*time.Second)
	data, err := os.ReadFile(filepath.Join(dir, "access.log"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "secret") || strings.Contains(string(data), "wrong-key") {
		t.Errorf("the access log holds an access key:\n%s", data)
	}
	var got []string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for i := 0; sc.Scan(); i++ {
		var l struct {
			RequestID string `json:"request_id"`
			Status    int
			Decision  string
			Path      string
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if i < len(ids) && (l.RequestID == "" || l.RequestID != ids[i]) {
			t.Errorf("line %d: request_id %q, the caller got %q", i, l.RequestID, ids[i])
		}
		got = append(got, fmt.Sprint(l.Status, " ", l.Decision, " ", l.Path))
	}
	if want := "200 passed /claims/7|401 unauthenticated /claims/7"; strings.Join(got, "|") != want {
		t.Errorf("access log %q, want %q", strings.Join(got, "|"), want)
	}
}
