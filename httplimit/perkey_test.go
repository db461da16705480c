package httplimit_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluice-rl/sluice"
	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/memory"
)

// TestKeyByIP: an IPv4 address is its own key, an IPv6 address counts by
// its /64, a v4-mapped address as the IPv4 one.
func TestKeyByIP(t *testing.T) {
	for remote, want := range map[string]string{
		"192.0.2.1:1234":            "192.0.2.1",
		"[2001:db8:1:2:3::4]:443":   "2001:db8:1:2::/64",
		"[2001:db8:1:2:ffff::9]:80": "2001:db8:1:2::/64",
		"[::ffff:192.0.2.1]:1234":   "192.0.2.1",
		"192.0.2.9":                 "192.0.2.9",
		"pipe":                      "pipe",
		"[fe80::1%eth0]:80":         "fe80::/64",
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = remote
		if got := httplimit.KeyByIP(r); got != want {
			t.Errorf("KeyByIP(%q) = %q, want %q", remote, got, want)
		}
	}
}

// TestPerKey: each key has its own budget; a request without the header
// shares the key "" and cannot escape the limit; a denial is a 429 with
// Retry-After and the RateLimit fields, and never reaches the handler;
// time restores the budget.
func TestPerKey(t *testing.T) {
	clk := clock.NewFake(epoch)
	lim := sluice.New(limiter.MustNew(limiter.FixedWindow, 2, time.Minute, 0), sluice.Options{Clock: clk, Name: "tenants"})
	defer lim.Close()
	served := 0
	h := httplimit.PerKey(lim, httplimit.KeyByHeader("x-tenant")).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served++ }))
	get := func(tenant string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("GET", "/", nil)
		if tenant != "" {
			r.Header.Set("X-Tenant", tenant)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}
	for i, step := range []struct {
		tenant, rateLimit string
		status            int
	}{
		{"a", `"tenants";r=1;t=60`, 200},
		{"a", `"tenants";r=0;t=60`, 200},
		{"a", `"tenants";r=0;t=60`, 429},
		{"b", `"tenants";r=1;t=60`, 200},
		{"", `"tenants";r=1;t=60`, 200},
		{"", `"tenants";r=0;t=60`, 200},
		{"", `"tenants";r=0;t=60`, 429},
	} {
		w := get(step.tenant)
		if w.Code != step.status || w.Header().Get("RateLimit") != step.rateLimit {
			t.Errorf("request %d (tenant %q): %d RateLimit %q, want %d %q", i+1, step.tenant, w.Code, w.Header().Get("RateLimit"), step.status, step.rateLimit)
		}
		if w.Header().Get("RateLimit-Policy") != `"tenants";q=2;w=60` {
			t.Errorf("request %d: RateLimit-Policy %q", i+1, w.Header().Get("RateLimit-Policy"))
		}
		if step.status == 429 && (w.Header().Get("Retry-After") != "60" || w.Header().Get("Content-Type") != "application/problem+json") {
			t.Errorf("request %d: Retry-After %q, Content-Type %q, want 60 and a problem", i+1, w.Header().Get("Retry-After"), w.Header().Get("Content-Type"))
		}
	}
	if served != 5 {
		t.Errorf("handler served %d requests, want the 5 allowed", served)
	}
	clk.Advance(time.Minute)
	if w := get("a"); w.Code != 200 {
		t.Errorf("a minute later: %d, want 200", w.Code)
	}
}

// TestPerKeyStoreFailure: a store that cannot decide is answered as
// sluice.Limiter.Allow answers it: passed by default, 503 with Retry-After
// failing closed, and OnError sees the error either way.
func TestPerKeyStoreFailure(t *testing.T) {
	for _, tc := range []struct {
		policy store.FailurePolicy
		want   int
	}{{store.FailOpen, 200}, {store.FailClosed, 503}} {
		mem := memory.New(memory.Options{})
		mem.Close() // every decision now fails with store.ErrClosed
		var seen error
		lim := sluice.New(limiter.MustNew(limiter.FixedWindow, 2, time.Minute, 0), sluice.Options{Store: mem, OnFailure: tc.policy, OnError: func(err error) { seen = err }})
		w := httptest.NewRecorder()
		httplimit.PerKey(lim, httplimit.KeyByIP).Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		if w.Code != tc.want {
			t.Errorf("%v: %d, want %d", tc.policy, w.Code, tc.want)
		}
		if tc.want == 503 && w.Header().Get("Retry-After") != "1" {
			t.Errorf("%v: Retry-After %q, want 1", tc.policy, w.Header().Get("Retry-After"))
		}
		if !errors.Is(seen, store.ErrClosed) {
			t.Errorf("%v: OnError saw %v, want store.ErrClosed", tc.policy, seen)
		}
	}
}

// TestPerKeyFieldName: a limiter's Name that an sf-string cannot hold
// without escapes is written as "default", so that the RateLimit fields
// stay well-formed.
func TestPerKeyFieldName(t *testing.T) {
	for name, want := range map[string]string{"partner-api": `"partner-api";r=1;t=60`, `a"b`: `"default";r=1;t=60`, `a\b`: `"default";r=1;t=60`, "é": `"default";r=1;t=60`} {
		lim := sluice.New(limiter.MustNew(limiter.FixedWindow, 2, time.Minute, 0), sluice.Options{Clock: clock.NewFake(epoch), Name: name})
		w := httptest.NewRecorder()
		httplimit.PerKey(lim, httplimit.KeyByIP).Handler(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})).ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
		if got := w.Header().Get("RateLimit"); got != want {
			t.Errorf("Name %q: RateLimit %q, want %q", name, got, want)
		}
		_ = lim.Close()
	}
}
