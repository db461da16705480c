package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/policy"
)

// nginxHTTP is the rest of an nginx configuration around one of
// deploy/nginx's recipes, with a test's temporary paths: the recipe goes
// where {recipe} is, in the http block.
const nginxHTTP = `daemon off;
master_process off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path {dir}/body;
  proxy_temp_path {dir}/proxy;
  fastcgi_temp_path {dir}/fastcgi;
  uwsgi_temp_path {dir}/uwsgi;
  scgi_temp_path {dir}/scgi;
{recipe}
}
`

// The recipes in deploy/nginx: nginx asks sluice's /check (deny status
// 403) before it passes a request to the upstream, and maps 403 back to
// the 429 a caller of sluice's gateway gets, and 401 to sluice's own 401.
// They differ only in what happens when sluice cannot be asked: the
// request is served (fail open) or refused 503 (fail closed).
const (
	failOpen   = "sluice-fail-open.conf"
	failClosed = "sluice-fail-closed.conf"
)

// recipeAddrs are the example addresses in deploy/nginx's recipes, each
// replaced by a test's own: sluice's /check, nginx's port, the upstream.
var recipeAddrs = [3]string{"server 127.0.0.1:8082;", "listen 80;", "proxy_pass http://127.0.0.1:9000;"}

// nginxRecipe returns deploy/nginx/name.
func nginxRecipe(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "deploy", "nginx", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// nginxConf returns the configuration nginx runs: the recipe name with
// the test's addresses for the example ones, in nginxHTTP.
func nginxConf(t *testing.T, name, dir, check, listen, upstream string) string {
	t.Helper()
	recipe := nginxRecipe(t, name)
	for _, a := range recipeAddrs {
		if n := strings.Count(recipe, a); n != 1 {
			t.Fatalf("deploy/nginx/%s has %q %d times, want once (the test replaces it)", name, a, n)
		}
	}
	recipe = strings.NewReplacer(recipeAddrs[0], "server "+check+";", recipeAddrs[1], "listen "+listen+";",
		recipeAddrs[2], "proxy_pass "+upstream+";").Replace(recipe)
	return strings.NewReplacer("{dir}", dir, "{recipe}", recipe).Replace(nginxHTTP)
}

// nginxBinary returns nginx's path, failing the test (never skipping it)
// when there is none or it lacks auth_request: make test installs it.
func nginxBinary(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("nginx")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nginx"); serr != nil {
			t.Fatal("nginx not found: the /check end-to-end test needs Debian's nginx (make test installs it: apt-get install nginx-light)")
		}
		path = "/usr/sbin/nginx"
	}
	out, err := exec.Command(path, "-V").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "http_auth_request_module") {
		t.Fatalf("%s -V: %v: this nginx has no auth_request module (Debian's nginx and nginx-light have it)\n%s", path, err, out)
	}
	return path
}

// startNginx runs nginx with deploy/nginx's recipe name in front of
// upstream, asking /check at check, from a temporary prefix; it returns
// nginx's address.
// nginx binds a port found free a moment before: another process may take
// it first, so a failed start is tried again on another port.
func startNginx(t *testing.T, recipe, check, upstream string) string {
	t.Helper()
	bin := nginxBinary(t)
	var lastLog string
	for range 5 {
		dir := t.TempDir()
		listen := freeLoopback(t)
		conf := nginxConf(t, recipe, dir, check, listen, upstream)
		confPath := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(confPath, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-p", dir, "-c", confPath, "-e", filepath.Join(dir, "error.log"))
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatalf("start nginx: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if waitListening(listen, exited) {
			t.Cleanup(func() {
				_ = cmd.Process.Signal(syscall.SIGQUIT) // graceful
				select {
				case <-exited:
				case <-time.After(10 * time.Second):
					_ = cmd.Process.Kill()
					<-exited
				}
			})
			return listen
		}
		_ = cmd.Process.Kill()
		<-exited
		b, _ := os.ReadFile(filepath.Join(dir, "error.log"))
		lastLog = string(b)
	}
	t.Fatalf("nginx did not start; its last error log:\n%s", lastLog)
	return ""
}

// waitListening waits until addr takes connections (true) or the process
// has exited (false), for at most 10s.
func waitListening(addr string, exited <-chan struct{}) bool {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return true
		}
		select {
		case <-exited:
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
	return false
}

// freeLoopback returns a 127.0.0.1 address that was free a moment ago.
func freeLoopback(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// seenUpstream records what reached the upstream.
type seenUpstream struct {
	mu        sync.Mutex
	clients   []string // X-Sluice-Client of each request
	overrides []string // "Name: value" of every method- or path-override header received
}

func (s *seenUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.clients = append(s.clients, strings.Join(r.Header.Values("X-Sluice-Client"), ","))
	for name, vs := range r.Header {
		if policy.RemovedHeader(name) && name != policy.ClientHeader {
			s.overrides = append(s.overrides, name+": "+strings.Join(vs, ","))
		}
	}
	s.mu.Unlock()
	fmt.Fprintf(w, "claims service: %s", r.URL.Path)
}

func (s *seenUpstream) seen() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.clients...)
}

// nginxConfig is sluice's decision service for nginx: /check with deny
// status 403, partner-a at 2 requests a minute, partner-b at 100.
const nginxConfig = `decide:
  http: 127.0.0.1:0
  http_deny_status: 403
admin: 127.0.0.1:0
trusted_proxies: [127.0.0.1]
clients:
  list:
    - {id: partner-a, keys: [key-a-7d1f0c2b9e]}
    - {id: partner-b, keys: [key-b-3a9e5d1c0f], plan: large}
plans:
  large: {claims: 100/m}
rules:
  - {name: claims, match: {path: /claims}, rate: 2/m}
`

// TestNginxAuthRequest puts a real nginx, configured by each of
// deploy/nginx's recipes, in front of an upstream, asking `sluice serve`'s
// /check: an allowed caller's answer carries the RateLimit headers and the
// upstream learns who the caller is (whatever the caller sent); a caller
// over its limit gets sluice's 429 (Retry-After, RateLimit, the problem
// body) and reaches nothing; an unknown key gets sluice's 401.
func TestNginxAuthRequest(t *testing.T) {
	for _, recipe := range []string{failOpen, failClosed} {
		t.Run(recipe, func(t *testing.T) { testNginxAuthRequest(t, recipe) })
	}
}

// nginxGetter sends GET requests through nginx at addr.
type nginxGetter struct {
	t    *testing.T
	c    *http.Client
	addr string
}

func newNginxGetter(t *testing.T, addr string) *nginxGetter {
	c := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	t.Cleanup(c.CloseIdleConnections)
	return &nginxGetter{t: t, c: c, addr: addr}
}

// get sends GET uri with key as X-API-Key and the header pairs given, and
// returns the answer and its body.
func (g *nginxGetter) get(uri, key string, header ...string) (*http.Response, string) {
	g.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+g.addr+uri, nil)
	req.Header.Set("X-API-Key", key)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := g.c.Do(req)
	if err != nil {
		g.t.Fatalf("GET %s through nginx: %v", uri, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func testNginxAuthRequest(t *testing.T, recipe string) {
	up := &seenUpstream{}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	replace(t, path, nginxConfig)
	p := startServe(t, path)
	get := newNginxGetter(t, startNginx(t, recipe, checkAddr(p.logs.String()), upSrv.URL)).get

	for i, wantR := range []string{"1", "0"} {
		resp, body := get("/claims/"+strconv.Itoa(i), "key-a-7d1f0c2b9e", "X-Sluice-Client", "partner-b")
		if resp.StatusCode != 200 || body != "claims service: /claims/"+strconv.Itoa(i) {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
		if got := resp.Header.Get("RateLimit-Policy"); got != `"claims";q=2;w=60` {
			t.Errorf("request %d: RateLimit-Policy %q", i, got)
		}
		if got := resp.Header.Get("RateLimit"); !strings.HasPrefix(got, `"claims";r=`+wantR+";t=") {
			t.Errorf("request %d: RateLimit %q, want r=%s", i, got, wantR)
		}
	}
	if got := up.seen(); len(got) != 2 || got[0] != "partner-a" || got[1] != "partner-a" {
		t.Fatalf("the upstream saw X-Sluice-Client %q, want partner-a twice (the caller's own copy removed)", got)
	}

	resp, body := get("/claims/2", "key-a-7d1f0c2b9e")
	retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 429 || retry < 1 || retry > 60 {
		t.Fatalf("over the limit: %d, Retry-After %q, want 429 and 1..60", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	if got, want := resp.Header.Get("RateLimit"), fmt.Sprintf(`"claims";r=0;t=%d`, retry); got != want {
		t.Errorf("RateLimit %q, want %q (t equals Retry-After)", got, want)
	}
	if resp.Header.Get("RateLimit-Policy") != `"claims";q=2;w=60` || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Errorf("RateLimit-Policy %q, Content-Type %q", resp.Header.Get("RateLimit-Policy"), resp.Header.Get("Content-Type"))
	}
	var prob struct {
		Type, Detail string
		Status       int
		Violated     []string `json:"violated-policies"`
	}
	if err := json.Unmarshal([]byte(body), &prob); err != nil {
		t.Fatalf("problem body %q: %v", body, err)
	}
	if prob.Status != 429 || !strings.HasPrefix(prob.Detail, "partner-a exceeded 2 requests per 1m (rule claims); retry in ") ||
		prob.Type != "https://iana.org/assignments/http-problem-types#quota-exceeded" || len(prob.Violated) != 1 {
		t.Errorf("problem %+v", prob)
	}
	if n := len(up.seen()); n != 2 {
		t.Errorf("the upstream saw %d requests, want 2: a limited one reached it", n)
	}

	if resp, _ := get("/claims/9", "key-b-3a9e5d1c0f"); resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("RateLimit"), `"claims";r=99`) {
		t.Errorf("partner-b: %d, RateLimit %q", resp.StatusCode, resp.Header.Get("RateLimit"))
	}
	resp, body = get("/claims/1", "no-such-key")
	if resp.StatusCode != 401 || !strings.Contains(body, `"status":401`) {
		t.Errorf("unknown key: %d %q, want sluice's 401 problem", resp.StatusCode, body)
	}
	if got := up.seen(); len(got) != 3 || got[2] != "partner-b" {
		t.Errorf("the upstream saw %q, want partner-a twice then partner-b", got)
	}
}

// TestNginxOverrideHeaders (issue 15 item 12): sluice counts the request
// line nginx describes in X-Original-Method and X-Original-URI, so the
// recipes clear the method- and path-override headers, with which some
// upstreams serve another request (a POST counted as a write served as a
// GET): none reaches the upstream, in any case; nginx drops the spellings
// with underscores itself (underscores_in_headers off).
func TestNginxOverrideHeaders(t *testing.T) {
	for _, recipe := range []string{failOpen, failClosed} {
		t.Run(recipe, func(t *testing.T) { testNginxOverrideHeaders(t, recipe) })
	}
}

func testNginxOverrideHeaders(t *testing.T, recipe string) {
	up := &seenUpstream{}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	replace(t, path, nginxConfig)
	p := startServe(t, path)
	ngx := startNginx(t, recipe, checkAddr(p.logs.String()), upSrv.URL)
	c, err := net.Dial("tcp", ngx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	_, _ = io.WriteString(c, "POST /claims/1 HTTP/1.1\r\nHost: x\r\nX-API-Key: key-b-3a9e5d1c0f\r\nContent-Length: 0\r\n"+
		"X-HTTP-Method-Override: GET\r\nx-http-method: GET\r\nX-METHOD-OVERRIDE: GET\r\n"+
		"X-Original-URL: /free\r\nx-rewrite-url: /free\r\nX_HTTP_Method_Override: GET\r\nX_Original_URL: /free\r\n"+
		"Connection: close\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	up.mu.Lock()
	defer up.mu.Unlock()
	if len(up.clients) != 1 || len(up.overrides) != 0 {
		t.Errorf("the upstream received %d requests, with the override headers %q; want one, with none", len(up.clients), up.overrides)
	}
}

// TestNginxRecipeInDocs: docs/decide.md's first nginx block is
// deploy/nginx/sluice-fail-open.conf, and its second holds every line
// sluice-fail-closed.conf adds to it and no line that file lacks (comments
// aside).
func TestNginxRecipeInDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "decide.md"))
	if err != nil {
		t.Fatal(err)
	}
	var blocks [][]string
	for rest := string(doc); len(blocks) < 2; {
		var block string
		var ok, ok2 bool
		_, rest, ok = strings.Cut(rest, "```nginx\n")
		block, rest, ok2 = strings.Cut(rest, "```")
		if !ok || !ok2 {
			t.Fatalf("docs/decide.md has %d ```nginx blocks, want two (the recipe failing open, then what failing closed changes)", len(blocks))
		}
		blocks = append(blocks, trimmedLines(block))
	}
	open, closed := trimmedLines(nginxRecipe(t, failOpen)), trimmedLines(nginxRecipe(t, failClosed))
	if got, want := strings.Join(blocks[0], "\n"), strings.Join(open, "\n"); got != want {
		t.Errorf("docs/decide.md's recipe:\n%s\n\ndeploy/nginx/%s:\n%s", got, failOpen, want)
	}
	for _, l := range closed {
		if !slices.Contains(open, l) && !slices.Contains(blocks[1], l) && !strings.HasPrefix(l, "#") {
			t.Errorf("docs/decide.md's changes for failing closed lack %q of deploy/nginx/%s", l, failClosed)
		}
	}
	for _, l := range blocks[1] {
		if !slices.Contains(closed, l) && !strings.HasPrefix(l, "#") {
			t.Errorf("docs/decide.md's changes for failing closed have %q, not in deploy/nginx/%s", l, failClosed)
		}
	}
}

func trimmedLines(s string) []string {
	var out []string
	for l := range strings.Lines(s) {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// TestNginxSluiceDown: with sluice up, both recipes answer 200 and 429 as
// sluice decides; once sluice is stopped (nginx's connection refused),
// sluice-fail-open.conf serves the request (the upstream reached, without
// RateLimit headers or a caller's id) and sluice-fail-closed.conf answers
// 503 with Retry-After and a problem body, reaching nothing. A sluice that
// takes connections and never answers is given up after the recipe's
// proxy_read_timeout (1s, not nginx's default 60s), with the same answers.
func TestNginxSluiceDown(t *testing.T) {
	for _, recipe := range []string{failOpen, failClosed} {
		t.Run(recipe, func(t *testing.T) { testNginxSluiceDown(t, recipe) })
	}
}

func testNginxSluiceDown(t *testing.T, recipe string) {
	up := &seenUpstream{}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	replace(t, path, nginxConfig)
	p := startServe(t, path)
	get := newNginxGetter(t, startNginx(t, recipe, checkAddr(p.logs.String()), upSrv.URL)).get

	for i, want := range []int{200, 200, 429} {
		if resp, _ := get("/claims/"+strconv.Itoa(i), "key-a-7d1f0c2b9e"); resp.StatusCode != want {
			t.Fatalf("sluice up, request %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
	p.terminate(t, 15*time.Second)
	wantSluiceDown(t, recipe, up, 2, get)

	// A sluice that takes the connection and says nothing.
	hung := hungListener(t)
	get = newNginxGetter(t, startNginx(t, recipe, hung, upSrv.URL)).get
	start := time.Now()
	wantSluiceDown(t, recipe, up, len(up.seen()), get)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a sluice that does not answer held the request %v, want about proxy_read_timeout (1s)", took)
	}
}

// wantSluiceDown checks the answer to a request through nginx when sluice
// cannot decide: served by the upstream (fail open: the upstream's
// requests go from seen to seen+1) or 503 (fail closed: they stay seen).
func wantSluiceDown(t *testing.T, recipe string, up *seenUpstream, seen int,
	get func(uri, key string, header ...string) (*http.Response, string)) {
	t.Helper()
	resp, body := get("/claims/9", "key-a-7d1f0c2b9e", "X-Sluice-Client", "partner-b")
	got := up.seen()
	switch recipe {
	case failOpen:
		if resp.StatusCode != 200 || body != "claims service: /claims/9" {
			t.Fatalf("sluice down, failing open: %d %q, want the upstream's 200", resp.StatusCode, body)
		}
		if resp.Header.Get("RateLimit") != "" || resp.Header.Get("RateLimit-Policy") != "" {
			t.Errorf("sluice down: RateLimit %q, RateLimit-Policy %q; want none (nothing was decided)",
				resp.Header.Get("RateLimit"), resp.Header.Get("RateLimit-Policy"))
		}
		if len(got) != seen+1 || got[seen] != "" {
			t.Errorf("the upstream saw X-Sluice-Client %q, want one more request without it (the caller's own removed)", got)
		}
	case failClosed:
		var prob struct{ Status int }
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "5" ||
			resp.Header.Get("Content-Type") != "application/problem+json" || json.Unmarshal([]byte(body), &prob) != nil || prob.Status != 503 {
			t.Fatalf("sluice down, failing closed: %d, Retry-After %q, Content-Type %q, %q; want 503, 5, a problem",
				resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"), body)
		}
		if len(got) != seen {
			t.Errorf("the upstream saw %d requests, want %d: a request reached it while sluice was down", len(got), seen)
		}
	}
}

// hungListener returns the address of a listener that accepts connections
// and never answers on them, as a sluice stuck would.
func hungListener(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return l.Addr().String()
}
