package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestServeProtectCeiling runs `sluice serve` with a protect block as a
// real process, offers three times the load max_in_flight admits, and counts
// at the upstream that it never holds more than max_in_flight requests at
// once; every request is answered 200 after its turn in the queue.
func TestServeProtectCeiling(t *testing.T) {
	const ceiling, callers, each = 3, 9, 10
	var inFlight, maxSeen, hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := maxSeen.Load(); n > m && !maxSeen.CompareAndSwap(m, n); m = maxSeen.Load() {
		}
		hits.Add(1)
		time.Sleep(2 * time.Millisecond) // the service's work, not synchronisation
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(up.Close) // after sluice has stopped
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	replace(t, path, strings.Replace(serveConfigText(up.URL, "1000000/m"), "clients:",
		fmt.Sprintf("protect: {max_in_flight: %d, queue: {max_wait: 1m, max_length: 100}}\nclients:", ceiling), 1))

	p := startServe(t, path)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: callers}, Timeout: time.Minute}
	defer c.CloseIdleConnections()
	var wg sync.WaitGroup
	failed := make(chan string, callers*each)
	for range callers {
		wg.Go(func() {
			for range each {
				req, _ := http.NewRequest(http.MethodGet, "http://"+p.listen+"/claims/7", nil)
				req.Header.Set("X-API-Key", "cmd-secret-key-a-91c2")
				resp, err := c.Do(req)
				if err != nil {
					failed <- err.Error()
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				_ = resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					failed <- fmt.Sprintf("%d %s", resp.StatusCode, body)
				}
			}
		})
	}
	wg.Wait()
	close(failed)
	for f := range failed {
		t.Errorf("a request failed: %s", f)
	}
	if got := maxSeen.Load(); got > ceiling {
		t.Errorf("the upstream held %d requests at once, want at most max_in_flight %d", got, ceiling)
	}
	if got := hits.Load(); got != callers*each {
		t.Errorf("the upstream saw %d requests, want %d", got, callers*each)
	}
	metrics := fetch(t, c, http.MethodGet, "http://"+p.admin+"/metrics", "").body
	if !strings.Contains(metrics, fmt.Sprintf("\nsluice_in_flight_limit{upstream=\"default\"} %d\n", ceiling)) {
		t.Errorf("no sluice_in_flight_limit %d in the metrics", ceiling)
	}
}
