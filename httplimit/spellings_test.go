package httplimit_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/httplimit"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/memory"
)

// passed records the requests a Limiter passed on.
type passed struct {
	mu   sync.Mutex
	reqs []*http.Request
}

func (p *passed) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.reqs = append(p.reqs, r)
	p.mu.Unlock()
}

func (p *passed) last(t *testing.T) *http.Request {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.reqs) == 0 {
		t.Fatal("nothing was passed on")
	}
	return p.reqs[len(p.reqs)-1]
}

func (p *passed) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.reqs)
}

// spellings is a Limiter for p in front of a recorder; send sends a request
// parsed from a raw request line, as a server would.
type spellings struct {
	t    *testing.T
	h    http.Handler
	next *passed
	mem  *memory.Store
}

func newSpellings(t *testing.T, p policy.Policy) *spellings {
	t.Helper()
	clk := clock.NewFake(epoch)
	mem := memory.New(memory.Options{Clock: clk})
	t.Cleanup(func() { _ = mem.Close() })
	lim, err := httplimit.New(httplimit.Options{Policy: compile(t, p), Store: mem, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	next := &passed{}
	return &spellings{t: t, h: lim.Handler(next), next: next, mem: mem}
}

func (s *spellings) send(method, target string, header http.Header) *httptest.ResponseRecorder {
	s.t.Helper()
	r := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		r.Header[k] = v
	}
	w := httptest.NewRecorder()
	s.h.ServeHTTP(w, r)
	return w
}

// exhaust uses up partner-a's 3/m on GET /claims.
func (s *spellings) exhaust() {
	s.t.Helper()
	for range 3 {
		wantStatus(s.t, s.send("GET", "/claims/1", http.Header{"X-Api-Key": {"key-a"}}), 200, "GET /claims/1")
	}
	wantStatus(s.t, s.send("GET", "/claims/1", http.Header{"X-Api-Key": {"key-a"}}), 429, "4th GET /claims/1")
}

// No spelling of GET escapes a rule naming GET, and the handler receives
// the method the rule counted.
func TestMethodSpellingsCounted(t *testing.T) {
	s := newSpellings(t, partners())
	s.exhaust()
	for _, m := range []string{"get", "Get", "gEt", "head", "Head"} {
		wantStatus(t, s.send(m, "/claims/1", http.Header{"X-Api-Key": {"key-a"}}), 429, m+" /claims/1 from a limited client")
	}
	wantStatus(t, s.send("get", "/claims/1", http.Header{"X-Api-Key": {"key-b"}}), 200, "get from partner-b")
	if got := s.next.last(t).Method; got != "GET" {
		t.Errorf("the handler received method %q, want GET", got)
	}
}

// Method-override headers never reach the handler, in any spelling: the
// method counted is the method served.
func TestMethodOverrideHeadersRemoved(t *testing.T) {
	s := newSpellings(t, partners())
	hdr := http.Header{"X-Api-Key": {"key-a"}}
	for _, name := range []string{"X-Http-Method-Override", "X-Http-Method", "X-Method-Override",
		"X_http_method_override", "X-HTTP-METHOD", "x_method_override", "X_HTTP_METHOD"} {
		hdr[name] = []string{"GET"}
	}
	wantStatus(t, s.send("PATCH", "/claims/1", hdr), 200, "PATCH with overrides")
	got := s.next.last(t)
	for name := range got.Header {
		if strings.Contains(strings.ToLower(strings.ReplaceAll(name, "_", "-")), "method") {
			t.Errorf("the handler received %s: %q", name, got.Header[name])
		}
	}
	if got.Header.Get("X-Api-Key") != "key-a" {
		t.Errorf("the handler received X-API-Key %q, want key-a", got.Header.Get("X-Api-Key"))
	}
}

// Every spelling of /claims counts against the claims rule, and the
// handler receives the path the rule matched.
func TestPathSpellingsCountedAndPassedClean(t *testing.T) {
	cases := []struct{ target, path string }{
		{"/claims;x", "/claims"},
		{"/claims;jsessionid=1", "/claims"},
		{"/claims;jsessionid=1/7", "/claims/7"},
		{"/x/..;/claims", "/claims"},
		{"//claims/./7", "/claims/7"},
		{"/%63laims/7", "/claims/7"},
		{"/x/%2e%2e/claims", "/claims"},
		{"/claims/7/..", "/claims/"},
	}
	limited := newSpellings(t, partners())
	limited.exhaust()
	for _, c := range cases {
		wantStatus(t, limited.send("GET", c.target, http.Header{"X-Api-Key": {"key-a"}}), 429, "GET "+c.target+" from a limited client")
	}
	roomy := partners()
	roomy.Rules[0].Rate = rate(100, time.Minute)
	s := newSpellings(t, roomy)
	for _, c := range cases {
		wantStatus(t, s.send("GET", c.target, http.Header{"X-Api-Key": {"key-a"}}), 200, "GET "+c.target)
		got := s.next.last(t)
		if got.URL.EscapedPath() != c.path || got.URL.Path != c.path {
			t.Errorf("GET %s: the handler received path %q (escaped %q), want %q", c.target, got.URL.Path, got.URL.EscapedPath(), c.path)
		}
		// A handler that proxies by RequestURI sends on what was counted.
		if got.RequestURI != c.path {
			t.Errorf("GET %s: the handler received RequestURI %q, want %q", c.target, got.RequestURI, c.path)
		}
	}
	wantStatus(t, s.send("get", "/x/..;/claims?q=1;2", http.Header{"X-Api-Key": {"key-a"}}), 200, "GET with a query")
	if got := s.next.last(t).RequestURI; got != "/claims?q=1;2" {
		t.Errorf("the handler received RequestURI %q, want /claims?q=1;2", got)
	}
	if n := s.mem.Len(); n != 1 {
		t.Errorf("%d counters, want 1 (partner-a's on claims)", n)
	}
}

// A path upstreams read in different ways is refused with 400 before
// anything is counted.
func TestPathSpellingsRefused(t *testing.T) {
	s := newSpellings(t, partners())
	for _, target := range []string{"/claims%3bx", "/claims%3Bjsessionid=1", "/claims%2f7", "/x%2F..%2Fclaims",
		"/claims%5c7", "/claims%253b", "/claims%00", "/claims%23x", "/claims%3fx"} {
		w := s.send("GET", target, http.Header{"X-Api-Key": {"key-a"}})
		p := readProblem(t, w, http.StatusBadRequest)
		if !strings.Contains(p.Detail, "path") {
			t.Errorf("GET %s: detail %q does not say what is wrong", target, p.Detail)
		}
	}
	if n, c := s.next.count(), s.mem.Len(); n != 0 || c != 0 {
		t.Errorf("%d requests passed, %d counters; want 0, 0", n, c)
	}
}

// X-Original-URL and X-Rewrite-URL, with which IIS and Symfony serve
// another path than the request line's, never reach the handler.
func TestPathOverrideHeadersRemoved(t *testing.T) {
	s := newSpellings(t, partners())
	s.exhaust()
	hdr := http.Header{"X-Api-Key": {"key-a"}}
	for _, name := range []string{"X-Original-Url", "X-Rewrite-Url", "X_original_url", "X-REWRITE-URL"} {
		hdr[name] = []string{"/claims/1"}
	}
	wantStatus(t, s.send("GET", "/other", hdr), 200, "GET /other with path overrides")
	if got := s.next.last(t).Header; len(got) != 2 || got.Get("X-Api-Key") != "key-a" {
		t.Errorf("the handler received %v, want X-Api-Key and X-Sluice-Client only", got)
	}
}

// With CaseInsensitivePaths, /CLAIMS is /claims to the rules, as Express
// and ASP.NET Core route it; the handler receives the path as sent.
func TestCaseInsensitivePaths(t *testing.T) {
	p := partners()
	p.CaseInsensitivePaths = true
	s := newSpellings(t, p)
	s.exhaust()
	for _, target := range []string{"/CLAIMS", "/Claims/1", "/cLaImS;x/1", "/claim%C5%BF"} {
		wantStatus(t, s.send("GET", target, http.Header{"X-Api-Key": {"key-a"}}), 429, "GET "+target)
	}
	wantStatus(t, s.send("GET", "/CLAIMS/Ab", http.Header{"X-Api-Key": {"key-b"}}), 200, "GET /CLAIMS/Ab from partner-b")
	if got := s.next.last(t).URL.Path; got != "/CLAIMS/Ab" {
		t.Errorf("the handler received %q, want /CLAIMS/Ab", got)
	}
	// Without it, /CLAIMS is another path (a case-sensitive upstream's 404).
	s = newSpellings(t, partners())
	s.exhaust()
	wantStatus(t, s.send("GET", "/CLAIMS", http.Header{"X-Api-Key": {"key-a"}}), 200, "GET /CLAIMS, case-sensitive")
}

// A key header sent twice, or holding a list, is refused (400) in both
// modes: never counted anonymous while a key travels on.
func TestKeyHeaderTwiceRefused(t *testing.T) {
	for _, anonymous := range []bool{false, true} {
		p := partners()
		if anonymous {
			p.Clients.Unknown = policy.UnknownAnonymous
		}
		s := newSpellings(t, p)
		for _, keys := range [][]string{{"key-a", "key-a"}, {"key-a", "key-b"}, {"nope", "key-a"}, {"key-a, key-a"}, {"nope, key-a"}} {
			w := s.send("GET", "/claims/1", http.Header{"X-Api-Key": keys})
			p := readProblem(t, w, http.StatusBadRequest)
			if !strings.Contains(p.Detail, "X-API-Key") || strings.Contains(w.Body.String(), "key-a") {
				t.Errorf("anonymous %v, keys %q: detail %q (want the header named, no key)", anonymous, keys, p.Detail)
			}
		}
		if n, c := s.next.count(), s.mem.Len(); n != 0 || c != 0 {
			t.Errorf("anonymous %v: %d requests passed, %d counters; want 0, 0", anonymous, n, c)
		}
	}
}

// A respelled key header (X_API_KEY, read by CGI-style upstreams as the
// key) is neither read nor passed on; the key header itself is.
func TestKeyHeaderRespellingRemoved(t *testing.T) {
	p := partners()
	p.Clients.Unknown = policy.UnknownAnonymous
	p.Plans[policy.AnonymousPlan] = policy.Plan{Limits: map[string]policy.Rate{"claims": rate(1, time.Minute)}}
	s := newSpellings(t, p)
	wantStatus(t, s.send("GET", "/claims/1", http.Header{"X_api_key": {"key-a"}, "X-API_KEY": {"key-a"}}), 200, "respelled key")
	got := s.next.last(t)
	if len(got.Header) != 1 || got.Header.Get(httplimit.ClientHeader) != "anonymous" {
		t.Errorf("the handler received %v, want X-Sluice-Client: anonymous only", got.Header)
	}
	wantStatus(t, s.send("GET", "/claims/1", http.Header{"X_api_key": {"key-a"}}), 429, "respelled key: anonymous, limited")
	wantStatus(t, s.send("GET", "/claims/1", http.Header{"X-Api-Key": {"key-a"}, "X_api_key": {"key-b"}}), 200, "key and respelling")
	got = s.next.last(t)
	if v := got.Header["X-Api-Key"]; len(v) != 1 || v[0] != "key-a" || len(got.Header) != 2 {
		t.Errorf("the handler received %v, want X-Api-Key: key-a and X-Sluice-Client only", got.Header)
	}
}
