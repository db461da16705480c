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
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/policy"
)

// nginxRecipe is docs/decide.md's nginx recipe, with the addresses and the
// temporary paths of a test: nginx asks sluice's /check (deny status 403)
// before it passes a request to the upstream, and maps 403 back to the 429
// a caller of sluice's gateway gets, and 401 to sluice's own 401.
const nginxRecipe = `daemon off;
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

  upstream sluice_check {
    server {check};
    keepalive 16;
  }

  server {
    listen {listen};

    location / {
      auth_request /_sluice_check;
      auth_request_set $sluice_client $upstream_http_x_sluice_client;
      auth_request_set $sluice_policy $upstream_http_ratelimit_policy;
      auth_request_set $sluice_ratelimit $upstream_http_ratelimit;
      auth_request_set $sluice_retry_after $upstream_http_retry_after;
      auth_request_set $sluice_problem $upstream_http_x_sluice_problem;
      error_page 403 = @sluice_limited;
      error_page 401 = @sluice_unauthorized;
      add_header RateLimit-Policy $sluice_policy always;
      add_header RateLimit $sluice_ratelimit always;
      proxy_set_header X-Sluice-Client $sluice_client;
      proxy_set_header X-HTTP-Method-Override "";
      proxy_set_header X-HTTP-Method "";
      proxy_set_header X-Method-Override "";
      proxy_set_header X-Original-URL "";
      proxy_set_header X-Rewrite-URL "";
      proxy_pass {upstream};
    }

    location = /_sluice_check {
      internal;
      proxy_pass http://sluice_check/check;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_pass_request_body off;
      proxy_set_header Content-Length "";
      proxy_set_header X-Original-Method $request_method;
      proxy_set_header X-Original-URI $request_uri;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
    }

    location @sluice_limited {
      default_type application/problem+json;
      add_header Retry-After $sluice_retry_after always;
      add_header RateLimit-Policy $sluice_policy always;
      add_header RateLimit $sluice_ratelimit always;
      add_header Cache-Control no-store always;
      return 429 $sluice_problem;
    }

    location @sluice_unauthorized {
      default_type application/problem+json;
      add_header Cache-Control no-store always;
      return 401 $sluice_problem;
    }
  }
}
`

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

// startNginx runs nginx with the recipe in front of upstream, asking
// /check at check, from a temporary prefix; it returns nginx's address.
// nginx binds a port found free a moment before: another process may take
// it first, so a failed start is tried again on another port.
func startNginx(t *testing.T, check, upstream string) string {
	t.Helper()
	bin := nginxBinary(t)
	var lastLog string
	for range 5 {
		dir := t.TempDir()
		listen := freeLoopback(t)
		conf := strings.NewReplacer("{dir}", dir, "{check}", check, "{listen}", listen, "{upstream}", upstream).Replace(nginxRecipe)
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

// TestNginxAuthRequest puts a real nginx, configured by docs/decide.md's
// recipe, in front of an upstream, asking `sluice serve`'s /check: an
// allowed caller's answer carries the RateLimit headers and the upstream
// learns who the caller is (whatever the caller sent); a caller over its
// limit gets sluice's 429 (Retry-After, RateLimit, the problem body) and
// reaches nothing; an unknown key gets sluice's 401.
func TestNginxAuthRequest(t *testing.T) {
	up := &seenUpstream{}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	replace(t, path, nginxConfig)
	p := startServe(t, path)
	ngx := startNginx(t, checkAddr(p.logs.String()), upSrv.URL)

	c := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	get := func(uri, key string, header ...string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+ngx+uri, nil)
		req.Header.Set("X-API-Key", key)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET %s through nginx: %v", uri, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

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
// recipe clears the method- and path-override headers, with which some
// upstreams serve another request (a POST counted as a write served as a
// GET): none reaches the upstream, in any case; nginx drops the spellings
// with underscores itself (underscores_in_headers off).
func TestNginxOverrideHeaders(t *testing.T) {
	up := &seenUpstream{}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	replace(t, path, nginxConfig)
	p := startServe(t, path)
	ngx := startNginx(t, checkAddr(p.logs.String()), upSrv.URL)
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

// TestNginxRecipeInDocs: docs/decide.md's nginx recipe is the one
// TestNginxAuthRequest runs, with example addresses for the test's.
func TestNginxRecipeInDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "decide.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "```nginx\n")
	block, _, ok2 := strings.Cut(block, "```")
	if !ok || !ok2 {
		t.Fatal("docs/decide.md has no ```nginx block")
	}
	block = strings.NewReplacer("server 127.0.0.1:8082;", "server {check};", "listen 80;", "listen {listen};",
		"http://127.0.0.1:9000;", "{upstream};").Replace(block)
	_, recipe, _ := strings.Cut(nginxRecipe, "\n  upstream sluice_check {")
	recipe = "upstream sluice_check {\n" + strings.TrimSuffix(strings.TrimSpace(recipe), "}")
	if got, want := trimmedLines(block), trimmedLines(recipe); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("docs/decide.md's recipe:\n%s\n\nthe test's:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
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
