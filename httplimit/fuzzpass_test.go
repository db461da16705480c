package httplimit_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/memory"
)

// fuzzPolicy: two partners by key, unknown callers anonymous; rules by
// method and path, by client and by a header (shared and reject).
func fuzzPolicy(fold bool) policy.Policy {
	rate := policy.Rate{N: 1000, Period: 60e9}
	return policy.Policy{
		CaseInsensitivePaths: fold,
		Clients: policy.Clients{Unknown: policy.UnknownAnonymous, List: []policy.Client{
			{ID: "partner-a", Keys: []string{"key-a"}}, {ID: "partner-b", Keys: []string{"key-b"}}}},
		Rules: []policy.Rule{
			{Name: "claims", Match: policy.Match{Path: "/claims", Methods: []string{"GET"}}, Rate: rate, Algorithm: limiter.FixedWindow},
			{Name: "writes", Match: policy.Match{Path: "/claims", Methods: []string{"POST", "PATCH"}}, Rate: rate, Algorithm: limiter.FixedWindow},
			{Name: "tenants", Match: policy.Match{Path: "/t"}, Key: policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant"},
				Rate: rate, Algorithm: limiter.FixedWindow},
			{Name: "strict", Match: policy.Match{Path: "/r"}, Key: policy.KeySpec{Kind: policy.KeyHeader, Header: "X-Tenant", Missing: policy.MissingReject},
				Rate: rate, Algorithm: limiter.FixedWindow},
		},
	}
}

// FuzzPassedAsCounted: whatever request a caller writes, if the Limiter
// passes it on, the handler receives it as it was counted: the method and
// path cleaned (cleaning again changes nothing) and matching exactly the
// rules that were decided; the key header once, naming the client the
// request was counted as; no respelling of the key or a counted header,
// no override header; X-Sluice-Client once, naming the caller.
func FuzzPassedAsCounted(f *testing.F) {
	for _, s := range []string{
		"GET /claims/1 HTTP/1.1\r\nHost: x\r\nX-API-Key: key-a\r\n\r\n",
		"get /CLAIMS;x/../claims HTTP/1.1\r\nHost: x\r\nX_API_KEY: key-b\r\nX-Api-Key: key-a\r\n\r\n",
		"POST /t HTTP/1.1\r\nHost: x\r\nX-Tenant: a\r\nx_tenant: b\r\nX-HTTP-Method-Override: GET\r\n\r\n",
		"GET /r/%63 HTTP/1.1\r\nHost: x\r\nX-Tenant: a\r\nX-Sluice-Client: partner-a\r\n\r\n",
	} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, raw string, fold bool) {
		r, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw)))
		if err != nil {
			return
		}
		r.RemoteAddr = "192.0.2.1:1234"
		pol := compile(t, fuzzPolicy(fold))
		clk := clock.NewFake(epoch)
		mem := memory.New(memory.Options{Clock: clk})
		defer mem.Close()
		var rep httplimit.Report
		lim, err := httplimit.New(httplimit.Options{Policy: pol, Store: mem, Clock: clk, OnDecision: func(_ *http.Request, r *httplimit.Report) {
			rep = *r
			rep.Rules = slices.Clone(r.Rules)
		}})
		if err != nil {
			t.Fatal(err)
		}
		var got *http.Request
		lim.Handler(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r })).ServeHTTP(httptest.NewRecorder(), r)
		if got == nil {
			return
		}
		checkPassedAsCounted(t, pol, got, &rep)
	})
}

func checkPassedAsCounted(t *testing.T, pol *policy.Compiled, got *http.Request, rep *httplimit.Report) {
	if m := policy.CanonicalMethod(got.Method); m != got.Method {
		t.Errorf("method %q passed on, cleaned it is %q", got.Method, m)
	}
	esc, dec, err := policy.CleanPath(got.URL.EscapedPath())
	if err != nil || esc != got.URL.EscapedPath() || dec != got.URL.Path {
		t.Errorf("path %q (%q) passed on, cleaned it is %q (%q), %v", got.URL.EscapedPath(), got.URL.Path, esc, dec, err)
	}
	var counted, matched []string
	for _, rr := range rep.Rules {
		counted = append(counted, rr.Rule)
	}
	for _, i := range pol.Match(got.Method, got.URL.Path, nil) {
		matched = append(matched, pol.Rule(i).Name)
	}
	if !slices.Equal(counted, matched) {
		t.Errorf("%s %s: rules decided %v, the request passed on matches %v", got.Method, got.URL.Path, counted, matched)
	}
	counts := map[string]bool{"X-Api-Key": true}
	for _, name := range matched {
		if name == "tenants" || name == "strict" {
			counts["X-Tenant"] = true
		}
	}
	for k, v := range got.Header {
		canon := textproto.CanonicalMIMEHeaderKey(strings.ReplaceAll(k, "_", "-"))
		switch {
		case policy.RemovedHeader(k) && k != httplimit.ClientHeader:
			t.Errorf("override header %s passed on", k)
		case counts[canon] && k != canon:
			t.Errorf("respelling %s of a counted header passed on", k)
		case counts[canon] && len(v) > 1:
			t.Errorf("counted header %s passed on %d times", k, len(v))
		}
	}
	if v := got.Header[httplimit.ClientHeader]; len(v) != 1 || v[0] != rep.Client {
		t.Errorf("X-Sluice-Client %q passed on, the request was counted as %q", v, rep.Client)
	}
	caller, listed := pol.CallerByKey(got.Header.Get("X-Api-Key"))
	if want := policy.AnonymousPlan; listed {
		want = caller.ID
		if rep.Client != want {
			t.Errorf("key of %s passed on, the request was counted as %s", want, rep.Client)
		}
	} else if rep.Client != want {
		t.Errorf("no listed key passed on, the request was counted as %s", rep.Client)
	}
}
