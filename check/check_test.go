package check_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-rl/sluice/check"
	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/config"
	"github.com/sluice-rl/sluice/decision"
	"github.com/sluice-rl/sluice/policy"
	"github.com/sluice-rl/sluice/store/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// policyText is the claims story: partner-a gets 2 GET /claims a minute,
// anonymous callers are counted by address (behind the trusted proxy
// 127.0.0.1) at 3 a minute on /public, and POST /claims is limited apart.
const policyText = `decide: {http: 127.0.0.1:0}
trusted_proxies: [127.0.0.1]
clients:
  unknown: anonymous
  list:
    - {id: partner-a, keys: [key-a]}
rules:
  - {name: claims, match: {path: /claims, methods: [GET]}, key: client, rate: 2/m}
  - {name: uploads, match: {path: /claims, methods: [POST]}, key: client, rate: 1/m}
  - {name: public, match: {path: /public}, key: ip, rate: 3/m}
`

// server serves /check with deny as its DenyStatus, on a fake clock that
// does not move, over a real socket, with ovs in force on the policy.
func server(t *testing.T, deny int, ovs ...policy.Override) *httptest.Server {
	t.Helper()
	f, err := config.Parse("t.yaml", []byte(policyText))
	if err != nil {
		t.Fatal(err)
	}
	pol, errs := f.Compiled.WithOverrides(ovs)
	if len(errs) > 0 {
		t.Fatal(errs[0].Err)
	}
	clk := clock.NewFake(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	st := memory.New(memory.Options{Clock: clk})
	t.Cleanup(func() { st.Close() })
	e, err := decision.New(decision.Options{Store: st, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	decide := func(ctx context.Context, req decision.Request) *decision.Verdict {
		return e.Decide(ctx, decision.Settings{Policy: pol}, req)
	}
	h, err := check.New(check.Options{Decide: decide, DenyStatus: deny})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

// ask sends a question to /check with the given headers.
func ask(t *testing.T, srv *httptest.Server, headers map[string]string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, srv.URL+check.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func nginxAsks(method, uri, key string) map[string]string {
	h := map[string]string{"X-Original-Method": method, "X-Original-URI": uri}
	if key != "" {
		h["X-API-Key"] = key
	}
	return h
}

// traefikAsks is a question shaped as Traefik's forwardAuth sends it: the
// original request in X-Forwarded-Method, -Proto, -Host, -Uri and the
// caller's address appended to X-Forwarded-For.
func traefikAsks(method, uri, caller string) map[string]string {
	return map[string]string{"X-Forwarded-Method": method, "X-Forwarded-Proto": "https",
		"X-Forwarded-Host": "claims.example", "X-Forwarded-Uri": uri, "X-Forwarded-For": caller}
}

type problem struct {
	Type     string   `json:"type"`
	Title    string   `json:"title"`
	Status   int      `json:"status"`
	Detail   string   `json:"detail"`
	Violated []string `json:"violated-policies"`
}

func readProblem(t *testing.T, r io.Reader) problem {
	t.Helper()
	var p problem
	if err := json.NewDecoder(r).Decode(&p); err != nil {
		t.Fatalf("problem body: %v", err)
	}
	return p
}

// A caller within its limit gets 200 with the RateLimit headers and its
// id; over it, the 429 a caller of the gateway gets.
func TestAllowedThenLimited(t *testing.T) {
	srv := server(t, 429)
	for i, wantR := range []string{"1", "0"} {
		resp := ask(t, srv, nginxAsks("GET", "/claims/7?full=1", "key-a"))
		if resp.StatusCode != 200 || resp.Header.Get("X-Sluice-Client") != "partner-a" {
			t.Fatalf("question %d: %d, client %q", i, resp.StatusCode, resp.Header.Get("X-Sluice-Client"))
		}
		if got, want := resp.Header.Get("RateLimit"), `"claims";r=`+wantR; !strings.HasPrefix(got, want) {
			t.Errorf("question %d: RateLimit %q, want %s...", i, got, want)
		}
		if got := resp.Header.Get("RateLimit-Policy"); got != `"claims";q=2;w=60` {
			t.Errorf("RateLimit-Policy %q", got)
		}
	}
	resp := ask(t, srv, nginxAsks("GET", "/claims/8", "key-a"))
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("over the limit: %d, Retry-After %q, %q", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"))
	}
	if !strings.HasPrefix(resp.Header.Get("RateLimit"), `"claims";r=0;t=`) || resp.Header.Get(check.ProblemHeader) != "" {
		t.Errorf("RateLimit %q, problem header %q", resp.Header.Get("RateLimit"), resp.Header.Get(check.ProblemHeader))
	}
	if p := readProblem(t, resp.Body); p.Status != 429 || len(p.Violated) != 1 || p.Violated[0] != "claims" {
		t.Errorf("problem %+v", p)
	}
	// Another method is another rule: POST /claims is still allowed.
	if resp := ask(t, srv, nginxAsks("POST", "/claims", "key-a")); resp.StatusCode != 200 ||
		!strings.HasPrefix(resp.Header.Get("RateLimit"), `"uploads";r=0`) {
		t.Errorf("POST: %d, RateLimit %q", resp.StatusCode, resp.Header.Get("RateLimit"))
	}
	// An unknown key is not a client: the anonymous plan, counted by address.
	if resp := ask(t, srv, nginxAsks("GET", "/public", "")); resp.StatusCode != 200 || resp.Header.Get("X-Sluice-Client") != "anonymous" {
		t.Errorf("anonymous: %d, client %q", resp.StatusCode, resp.Header.Get("X-Sluice-Client"))
	}
}

// With DenyStatus 403 (nginx), a request over its limit is answered 403,
// with the headers a caller needs and the problem body also in
// X-Sluice-Problem for nginx to answer the caller with.
func TestDenyStatus403(t *testing.T) {
	srv := server(t, 403)
	for range 2 {
		ask(t, srv, nginxAsks("GET", "/claims", "key-a"))
	}
	resp := ask(t, srv, nginxAsks("GET", "/claims", "key-a"))
	if resp.StatusCode != 403 || resp.Header.Get("Retry-After") == "" || resp.Header.Get("RateLimit") == "" {
		t.Fatalf("%d, Retry-After %q, RateLimit %q", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("RateLimit"))
	}
	body := readProblem(t, resp.Body)
	inHeader := readProblem(t, strings.NewReader(resp.Header.Get(check.ProblemHeader)))
	if body.Status != 429 || body.Detail != inHeader.Detail || !strings.Contains(body.Detail, "partner-a exceeded 2 requests per 1m") {
		t.Errorf("body %+v, header %+v", body, inHeader)
	}
}

// A blocked client gets the gateway's 403 whatever DenyStatus is (as a
// 401 keeps its status), its problem body also in X-Sluice-Problem with
// DenyStatus 403, and nothing is counted: once unblocked it has its room.
func TestBlocked(t *testing.T) {
	for _, deny := range []int{429, 403} {
		srv := server(t, deny, policy.Override{Client: "partner-a", Block: true})
		resp := ask(t, srv, nginxAsks("GET", "/claims/7", "key-a"))
		p := readProblem(t, resp.Body)
		if resp.StatusCode != 403 || p.Status != 403 || p.Type != decision.ProblemBlocked ||
			p.Detail != "partner-a is blocked until an operator removes the block" || resp.Header.Get("Retry-After") != "" {
			t.Errorf("deny %d: %d %+v, Retry-After %q", deny, resp.StatusCode, p, resp.Header.Get("Retry-After"))
		}
		if inHeader := resp.Header.Get(check.ProblemHeader); (deny == 403) != strings.Contains(inHeader, p.Detail) {
			t.Errorf("deny %d: X-Sluice-Problem %q", deny, inHeader)
		}
	}
}

// Traefik's questions: the caller's address from X-Forwarded-For (the
// proxy 127.0.0.1 is trusted), each address counted apart; Traefik passes
// the 429 and its headers to the caller as they are.
func TestTraefikForwardAuth(t *testing.T) {
	srv := server(t, 429)
	for i := range 3 {
		if resp := ask(t, srv, traefikAsks("GET", "/public/a", "198.51.100.7")); resp.StatusCode != 200 {
			t.Fatalf("question %d: %d", i, resp.StatusCode)
		}
	}
	// The caller sent its own X-Forwarded-For; Traefik appended the
	// address it came from, which is what counts.
	resp := ask(t, srv, traefikAsks("GET", "/public/b?page=2", "203.0.113.9, 198.51.100.7"))
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.HasPrefix(resp.Header.Get("RateLimit"), `"public";r=0`) {
		t.Errorf("4th from one address: %d, Retry-After %q, RateLimit %q", resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("RateLimit"))
	}
	if p := readProblem(t, resp.Body); p.Status != 429 || !strings.Contains(p.Detail, "198.51.100.7") {
		t.Errorf("problem %+v, want the 429 naming the address counted", p)
	}
	if resp := ask(t, srv, traefikAsks("GET", "/public/a", "198.51.100.8")); resp.StatusCode != 200 {
		t.Errorf("another address: %d", resp.StatusCode)
	}
}

// The original URI is read as the gateway reads a request line: nginx's
// $request_uri is the raw target, which the upstream resolves, so a dot
// segment cannot take a request out of its rule, and the query is not
// part of the path.
func TestOriginalPathCleaned(t *testing.T) {
	srv := server(t, 429)
	for _, tc := range []struct {
		uri       string
		status    int
		rateLimit string
	}{
		{"/public/../claims/7", 200, `"claims";r=1`},
		{"/claims/./7?x=/public", 200, `"claims";r=0`},
		{"/%63laims/7", 429, `"claims";r=0`}, // partner-a's third: over its 2
	} {
		resp := ask(t, srv, nginxAsks("GET", tc.uri, "key-a"))
		if got := resp.Header.Get("RateLimit"); resp.StatusCode != tc.status || !strings.HasPrefix(got, tc.rateLimit) {
			t.Errorf("%s: %d, RateLimit %q, want %d and %s", tc.uri, resp.StatusCode, got, tc.status, tc.rateLimit)
		}
	}
}

// Questions /check cannot take are answered 400 problem+json and count
// nothing.
func TestBadQuestions(t *testing.T) {
	srv := server(t, 403)
	for name, tc := range map[string]struct {
		headers map[string]string
		detail  string
	}{
		"no headers":     {map[string]string{}, "no original request"},
		"no method":      {map[string]string{"X-Original-URI": "/claims", "X-API-Key": "key-a"}, "no original method"},
		"no URI":         {map[string]string{"X-Forwarded-Method": "GET", "X-API-Key": "key-a"}, "no original URI"},
		"bad method":     {nginxAsks("GE T", "/claims", "key-a"), "is not an HTTP method token"},
		"absolute URI":   {nginxAsks("GET", "http://x/claims", "key-a"), "is not a path with an optional query"},
		"asterisk":       {nginxAsks("OPTIONS", "*", "key-a"), "is not a path with an optional query"},
		"URIs disagree":  {map[string]string{"X-Original-Method": "GET", "X-Original-URI": "/claims", "X-Forwarded-Uri": "/free", "X-API-Key": "key-a"}, "disagree"},
		"bad path":       {nginxAsks("GET", "/claims/%2e%2e%2ffree", "key-a"), "cannot be read one way only"},
		"methods differ": {map[string]string{"X-Original-Method": "GET", "X-Forwarded-Method": "POST", "X-Original-URI": "/claims", "X-API-Key": "key-a"}, "disagree"},
		"hosts differ":   {map[string]string{"X-Original-Method": "GET", "X-Original-URI": "/claims", "X-Original-Host": "a.example", "X-Forwarded-Host": "b.example", "X-API-Key": "key-a"}, "disagree"},
	} {
		resp := ask(t, srv, tc.headers)
		if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/problem+json" {
			t.Errorf("%s: %d %q", name, resp.StatusCode, resp.Header.Get("Content-Type"))
			continue
		}
		if p := readProblem(t, resp.Body); p.Status != 400 || !strings.Contains(p.Detail, tc.detail) {
			t.Errorf("%s: problem %+v, want detail with %q", name, p, tc.detail)
		}
	}
	// Nothing was counted: partner-a still has its 2.
	if resp := ask(t, srv, nginxAsks("GET", "/claims", "key-a")); !strings.HasPrefix(resp.Header.Get("RateLimit"), `"claims";r=1`) {
		t.Errorf("after the bad questions: RateLimit %q, want r=1", resp.Header.Get("RateLimit"))
	}
	resp := ask(t, srv, map[string]string{})
	if resp.Header.Get(check.ProblemHeader) == "" {
		t.Error("with DenyStatus 403 a 400 carries its problem in X-Sluice-Problem too")
	}
	if resp := ask(t, srv, nil); resp.StatusCode != 400 {
		t.Errorf("nil headers: %d", resp.StatusCode)
	}
}

// TestHostSpellingsAgree: X-Original-Host and X-Forwarded-Host naming one
// host in two spellings (case, port, trailing dot) are one host.
func TestHostSpellingsAgree(t *testing.T) {
	srv := server(t, 429)
	h := nginxAsks("GET", "/claims", "key-a")
	h["X-Original-Host"], h["X-Forwarded-Host"] = "claims.example.com", "Claims.Example.COM.:443"
	if resp := ask(t, srv, h); resp.StatusCode != 200 {
		t.Errorf("one host in two spellings: %d, want 200", resp.StatusCode)
	}
}

// Headers a client library would merge or refuse, written by hand on a
// real socket: an original URI sent twice, and one that names another
// path than the other header, are refused rather than one of them believed.
func TestRepeatedHeadersOnTheWire(t *testing.T) {
	srv := server(t, 429)
	for name, lines := range map[string]string{
		"X-Original-URI twice":  "X-Original-Method: GET\r\nX-Original-URI: /claims\r\nX-Original-URI: /free\r\n",
		"x-forwarded-uri twice": "x-forwarded-method: GET\r\nx-forwarded-uri: /claims\r\nX-FORWARDED-URI: /claims\r\n",
		"method twice":          "X-Original-Method: GET\r\nX-Original-Method: POST\r\nX-Original-URI: /claims\r\n",
	} {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.WriteString(conn, "GET /check HTTP/1.1\r\nHost: sluice\r\nX-API-Key: key-a\r\n"+lines+"Connection: close\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p := readProblem(t, resp.Body); resp.StatusCode != 400 || !strings.Contains(p.Detail, "times (once") {
			t.Errorf("%s: %d %+v", name, resp.StatusCode, p)
		}
		resp.Body.Close()
		conn.Close()
	}
	if resp := ask(t, srv, nginxAsks("GET", "/claims", "key-a")); !strings.HasPrefix(resp.Header.Get("RateLimit"), `"claims";r=1`) {
		t.Errorf("RateLimit %q: the refused questions counted", resp.Header.Get("RateLimit"))
	}
}

// Only /check answers; its answers to a question carry no body-closing
// Connection: close, so a proxy's keep-alive connection stays.
func TestOtherPaths(t *testing.T) {
	srv := server(t, 429)
	resp, err := srv.Client().Get(srv.URL + "/claims")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 404 {
		t.Errorf("/claims: %d", resp.StatusCode)
	}
	for range 3 {
		resp := ask(t, srv, nginxAsks("GET", "/claims", "key-a"))
		if resp.Close {
			t.Errorf("%d answered with Connection: close", resp.StatusCode)
		}
	}
}

func TestNewRefusesBadOptions(t *testing.T) {
	decide := func(context.Context, decision.Request) *decision.Verdict { return nil }
	if _, err := check.New(check.Options{Decide: decide, DenyStatus: 503}); err == nil || !strings.Contains(err.Error(), "want 429 or 403") {
		t.Errorf("DenyStatus 503: %v", err)
	}
	if _, err := check.New(check.Options{}); err == nil {
		t.Error("no Decide accepted")
	}
}
