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

// tokensConfig charges what the upstream reports in X-Usage-Tokens.
const tokensConfig = `listen: 127.0.0.1:18080
upstream: {{TOKENS}}
admin: 127.0.0.1:18090
rules:
  - name: tokens
    match: { path: /v1/complete }
    key: ip
    algorithm: token_bucket
    rate: 1000/h
    cost: 100
    cost_header: X-Usage-Tokens
`

// TestCostHeaderThroughTheGateway: the upstream's X-Usage-Tokens replaces
// the reservation (and reaches the caller unchanged); a value that is not
// a cost keeps the reservation and is logged once a second, not once a
// response.
func TestCostHeaderThroughTheGateway(t *testing.T) {
	tokens := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Usage-Tokens", r.URL.Query().Get("used"))
		_, _ = io.WriteString(w, "done")
	}))
	t.Cleanup(tokens.Close)
	h := newHarness(t)
	h.writeConfig(strings.ReplaceAll(tokensConfig, "{{TOKENS}}", tokens.URL))
	h.serve()
	complete := func(used string) response {
		t.Helper()
		r := h.do(h.url, http.MethodPost, "/v1/complete?used="+used, nil, "")
		if r.Status != http.StatusOK {
			t.Fatalf("used %q: %d %s", used, r.Status, r.Body)
		}
		return r
	}
	r := complete("30") // 1000-100 reserved, then 70 back
	if got := r.Header.Get("X-Usage-Tokens"); got != "30" {
		t.Errorf("the caller got X-Usage-Tokens %q, want the upstream's 30", got)
	}
	if got := complete("0").Header.Get("RateLimit"); !strings.Contains(got, "r=870") { // 970-100, then 100 back
		t.Errorf("after 30 used: RateLimit %q, want r=870 (970 less the reservation)", got)
	}
	for range 3 {
		complete("lots") // 100 each stand
	}
	if got := complete("0").Header.Get("RateLimit"); !strings.Contains(got, "r=570") { // 970-300-100
		t.Errorf("after 3 bad values: RateLimit %q, want r=570: each kept its 100", got)
	}
	if n := h.logs.count(t, "reserved cost kept"); n != 1 {
		t.Errorf("%d log lines for 3 bad values within a second, want 1:\n%s", n, h.logs.String())
	}
}
