package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// snapshotConfig sends every request to upstream under one rule named
// name, so that a response shows both the policy it was decided under (the
// rule in RateLimit-Policy) and the upstream it was proxied to (the body).
func snapshotConfig(name, upstream string) string {
	return `listen: 127.0.0.1:18080
upstream: ` + upstream + `
admin: 127.0.0.1:18090
rules:
  - name: ` + name + `
    key: global
    algorithm: fixed_window
    rate: 1000000000/m
`
}

// TestReloadOneSnapshot: while reloads swap between two files, each naming
// its own rule and its own upstream, every request is decided and proxied
// under one file: the rule it was counted by and the upstream it reached
// belong together.
func TestReloadOneSnapshot(t *testing.T) {
	ups := map[string]*httptest.Server{}
	for _, name := range []string{"one", "two"} {
		ups[name] = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.WriteString(w, name)
		}))
		defer ups[name].Close()
	}
	h := newHarness(t)
	h.writeConfig(snapshotConfig("one", ups["one"].URL))
	h.serve()
	stop := make(chan struct{})
	var reloads sync.WaitGroup
	reloads.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			name := []string{"two", "one"}[i%2]
			h.writeConfig(snapshotConfig(name, ups[name].URL))
			if err := h.g.Reload(); err != nil {
				t.Errorf("Reload: %v", err)
				return
			}
		}
	})
	var callers sync.WaitGroup
	var mixed, total, mu = 0, 0, sync.Mutex{}
	for range 4 {
		callers.Go(func() {
			for range 400 {
				r := h.get("/x", "")
				rule := strings.TrimSuffix(strings.TrimPrefix(r.Header.Get("RateLimit-Policy"), `"`), `";q=1000000000;w=60`)
				mu.Lock()
				total++
				if rule != r.Body {
					mixed++
				}
				mu.Unlock()
			}
		})
	}
	callers.Wait()
	close(stop)
	reloads.Wait()
	if mixed > 0 {
		t.Errorf("%d of %d requests were decided under one configuration and proxied under another", mixed, total)
	}
}
