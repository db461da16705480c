package gateway_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluice-rl/sluice/internal/redistest"
)

// loginConfig is the login example of docs/configuration.md: only failed
// logins count, 5 per 15 minutes per address.
const loginConfig = `listen: 127.0.0.1:18080
upstream: {{LOGIN}}
admin: 127.0.0.1:18090
rules:
  - name: login-failures
    match: { path: /login, methods: [POST] }
    key: ip
    rate: 5/15m
    count: failures
`

// TestLoginFailuresEndToEnd: through the gateway, successful logins are
// never counted; 5 failed ones are, and the next attempt gets 429 without
// reaching the service.
func TestLoginFailuresEndToEnd(t *testing.T) {
	loginFailures(t, "")
}

// TestLoginFailuresEndToEndOnRedis is the same with the counts in Redis,
// which decides and settles in its own clock (TIME), behind the failover
// store as sluice serve runs it.
func TestLoginFailuresEndToEndOnRedis(t *testing.T) {
	srv := redistest.StartServer(t)
	loginFailures(t, "store: {type: redis, redis: {addrs: ["+srv.Addr+"], prefix: "+redistest.KeyPrefix(t)+"}}\n")
}

// loginFailures runs the login story on a gateway with the given store
// block ("" for memory).
func loginFailures(t *testing.T, storeBlock string) {
	var hits atomic.Int64
	login := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		if string(body) != "password=right" {
			http.Error(w, "wrong password", http.StatusUnauthorized)
			return
		}
		_, _ = io.WriteString(w, "welcome")
	}))
	t.Cleanup(login.Close)
	h := newHarness(t)
	h.writeConfig(strings.ReplaceAll(loginConfig, "{{LOGIN}}", login.URL) + storeBlock)
	h.serve()
	attempt := func(password string) response {
		t.Helper()
		return h.do(h.url, http.MethodPost, "/login", map[string]string{"Content-Type": "text/plain"}, "password="+password)
	}
	for i := range 12 {
		if r := attempt("right"); r.Status != http.StatusOK {
			t.Fatalf("successful login %d: %d %s", i, r.Status, r.Body)
		}
	}
	for i := range 5 {
		if r := attempt("wrong"); r.Status != http.StatusUnauthorized {
			t.Fatalf("failed login %d: %d %s", i, r.Status, r.Body)
		}
		if i == 4 {
			break // the fifth failure fills the limit: now every attempt waits
		}
		if r := attempt("right"); r.Status != http.StatusOK { // never counted, in between too
			t.Fatalf("successful login after %d failures: %d %s", i+1, r.Status, r.Body)
		}
	}
	before := hits.Load()
	for _, password := range []string{"wrong", "right"} {
		r := attempt(password)
		if r.Status != http.StatusTooManyRequests || r.Header.Get("Retry-After") == "" {
			t.Errorf("after 5 failures, password %s: %d (Retry-After %q), want 429", password, r.Status, r.Header.Get("Retry-After"))
		}
	}
	if n := hits.Load() - before; n != 0 {
		t.Errorf("the service saw %d refused attempts", n)
	}
}
