// Package traefik holds no code: its test decodes dynamic.yaml as
// Traefik's file provider does (paerser's file.DecodeContent into
// Traefik's own dynamic.Configuration, unknown fields refused), and sends
// a real `sluice serve` (with sluice.yaml) the questions Traefik's
// forwardAuth asks with that configuration, applying the answers as it
// does. A real Traefik cannot be built here (its module graph needs
// versions the Go module proxy does not serve), so the questions are
// shaped by forwardAuth below, after Traefik v3.7's middleware. It is a
// module of its own, so that Traefik's types stay out of sluice's go.mod.
package traefik

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
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

	"github.com/traefik/paerser/file"
	"github.com/traefik/traefik/v3/pkg/config/dynamic"
	"github.com/traefik/traefik/v3/pkg/tls"
)

// decode reads a dynamic configuration as Traefik's file provider does:
// into a Configuration whose maps it has made, with paerser, which refuses
// a field the types do not have.
func decode(content string) (*dynamic.Configuration, error) {
	c := &dynamic.Configuration{
		HTTP: &dynamic.HTTPConfiguration{
			Routers:           map[string]*dynamic.Router{},
			Middlewares:       map[string]*dynamic.Middleware{},
			Services:          map[string]*dynamic.Service{},
			ServersTransports: map[string]*dynamic.ServersTransport{},
		},
		TCP: &dynamic.TCPConfiguration{
			Routers:           map[string]*dynamic.TCPRouter{},
			Services:          map[string]*dynamic.TCPService{},
			Middlewares:       map[string]*dynamic.TCPMiddleware{},
			ServersTransports: map[string]*dynamic.TCPServersTransport{},
		},
		TLS: &dynamic.TLSConfiguration{Stores: map[string]tls.Store{}, Options: map[string]tls.Options{}},
		UDP: &dynamic.UDPConfiguration{Routers: map[string]*dynamic.UDPRouter{}, Services: map[string]*dynamic.UDPService{}},
	}
	if err := file.DecodeContent(content, ".yaml", c); err != nil {
		return nil, err
	}
	return c, nil
}

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sluiceForwardAuth decodes dynamic.yaml and returns its middleware sluice.
func sluiceForwardAuth(t *testing.T) (*dynamic.Configuration, *dynamic.ForwardAuth) {
	t.Helper()
	c, err := decode(readFile(t, "dynamic.yaml"))
	if err != nil {
		t.Fatalf("dynamic.yaml: %v", err)
	}
	m := c.HTTP.Middlewares["sluice"]
	if m == nil || m.ForwardAuth == nil {
		t.Fatalf("dynamic.yaml: no forwardAuth middleware sluice (middlewares %v)", keys(c.HTTP.Middlewares))
	}
	return c, m.ForwardAuth
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// overrideHeaders are the method- and path-override headers sluice's
// gateway removes; the middleware no-overrides removes them here.
var overrideHeaders = []string{"X-HTTP-Method-Override", "X-HTTP-Method", "X-Method-Override", "X-Original-URL", "X-Rewrite-URL"}

// TestDynamicConfiguration: dynamic.yaml decodes into Traefik's types,
// strictly (a misspelt field is refused, as Traefik refuses the file);
// forwardAuth asks sluice.yaml's decide.http at /check, writes the
// X-Forwarded-* headers itself and copies X-Sluice-Client and the
// RateLimit headers onto an allowed request; the router's middlewares and
// service exist, and no-overrides removes every override header.
func TestDynamicConfiguration(t *testing.T) {
	c, fa := sluiceForwardAuth(t)
	u, err := url.Parse(fa.Address)
	if err != nil || u.Path != "/check" || !strings.Contains(readFile(t, "sluice.yaml"), "http: "+u.Host) {
		t.Errorf("forwardAuth address %q: want http://HOST/check with HOST sluice.yaml's decide.http", fa.Address)
	}
	if fa.TrustForwardHeader == nil || *fa.TrustForwardHeader {
		t.Errorf("trustForwardHeader %v, want false set (unset: Traefik warns and keeps some of the caller's X-Forwarded-* headers)", fa.TrustForwardHeader)
	}
	for _, h := range []string{"X-Sluice-Client", "RateLimit-Policy", "RateLimit"} {
		if !slices.Contains(fa.AuthResponseHeaders, h) {
			t.Errorf("authResponseHeaders %q lack %s", fa.AuthResponseHeaders, h)
		}
	}
	if len(fa.AuthRequestHeaders) != 0 {
		t.Errorf("authRequestHeaders %q: sluice needs the key header and every header a rule counts by", fa.AuthRequestHeaders)
	}
	no := c.HTTP.Middlewares["no-overrides"]
	if no == nil || no.Headers == nil {
		t.Fatal("dynamic.yaml: no headers middleware no-overrides")
	}
	for _, h := range overrideHeaders {
		if v, ok := no.Headers.CustomRequestHeaders[h]; !ok || v != "" {
			t.Errorf("no-overrides: %s is not removed (customRequestHeaders %q)", h, no.Headers.CustomRequestHeaders)
		}
	}
	if len(c.HTTP.Routers) == 0 {
		t.Fatal("dynamic.yaml: no routers")
	}
	for name, r := range c.HTTP.Routers {
		if !slices.Contains(r.Middlewares, "sluice") {
			t.Errorf("router %s: middlewares %q lack sluice", name, r.Middlewares)
		}
		for _, m := range r.Middlewares {
			if c.HTTP.Middlewares[m] == nil {
				t.Errorf("router %s: middleware %s is not defined", name, m)
			}
		}
		if s := c.HTTP.Services[r.Service]; s == nil || s.LoadBalancer == nil || len(s.LoadBalancer.Servers) == 0 {
			t.Errorf("router %s: service %q is not a load balancer with servers", name, r.Service)
		}
	}

	for _, bad := range []struct{ from, to string }{
		{"authResponseHeaders:", "authResponseHeader:"},
		{"trustForwardHeader: false", "trustForwardHeaders: false"},
		{"forwardAuth:", "forwardauthx:"},
	} {
		text := strings.Replace(readFile(t, "dynamic.yaml"), bad.from, bad.to, 1)
		if _, err := decode(text); err == nil {
			t.Errorf("dynamic.yaml with %q for %q decoded without an error: the decoding is not strict", bad.to, bad.from)
		}
	}
}

// forwardAuth asks sluice as Traefik v3.7's forwardAuth middleware does
// with trustForwardHeader false, and applies the answer as it does.
type forwardAuth struct {
	cfg    *dynamic.ForwardAuth
	client *http.Client
}

// hopHeaders are not sent on, by Traefik as by any proxy.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization", "Te", "Trailer", "Transfer-Encoding", "Upgrade"}

// ask sends /check the question for the caller's request r, which came
// from the address remote (host:port): r's headers, without hop-by-hop
// fields and without any X-Forwarded-* field r carries (trustForwardHeader
// false), then the X-Forwarded-* fields Traefik writes from r itself. With
// a 2xx answer it returns nil after replacing each of authResponseHeaders
// on r with the answer's; otherwise it returns the answer, which Traefik
// sends the caller as it is.
func (f forwardAuth) ask(r *http.Request, remote string) (*http.Response, error) {
	q, err := http.NewRequest(http.MethodGet, f.cfg.Address, nil)
	if err != nil {
		return nil, err
	}
	for name, vs := range r.Header {
		if !slices.Contains(hopHeaders, name) && !isForwarded(name) {
			q.Header[name] = slices.Clone(vs)
		}
	}
	host, _, _ := strings.Cut(remote, ":")
	q.Header.Set("X-Forwarded-For", host)
	q.Header.Set("X-Forwarded-Method", r.Method)
	q.Header.Set("X-Forwarded-Proto", "http")
	q.Header.Set("X-Forwarded-Port", "80")
	q.Header.Set("X-Forwarded-Host", r.Host)
	q.Header.Set("X-Forwarded-Uri", r.URL.RequestURI())
	resp, err := f.client.Do(q)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return resp, nil
	}
	resp.Body.Close()
	for _, name := range f.cfg.AuthResponseHeaders {
		name = http.CanonicalHeaderKey(name)
		r.Header.Del(name)
		if vs := resp.Header[name]; len(vs) > 0 {
			r.Header[name] = slices.Clone(vs)
		}
	}
	return nil, nil
}

// isForwarded reports whether name is one of the X-Forwarded-* fields
// Traefik manages (X-Real-Ip among them), in either spelling.
func isForwarded(name string) bool {
	n := strings.ReplaceAll(strings.ToLower(name), "_", "-")
	return strings.HasPrefix(n, "x-forwarded-") || n == "x-real-ip"
}

// TestForwardAuthAsksSluice runs `sluice serve` with sluice.yaml and asks
// its /check as forwardAuth asks with dynamic.yaml: partner-a is allowed,
// and the service learns who it is and its RateLimit headers (the copies
// the caller sent replaced, its own X-Forwarded-Uri ignored: the request
// counted is the one Traefik saw), without the override headers; a caller
// without a key is counted by the address Traefik saw, whatever
// X-Forwarded-For it sends, and over its plan it gets sluice's 429 with
// Retry-After, the RateLimit headers and the problem body; another address
// is counted apart.
func TestForwardAuthAsksSluice(t *testing.T) {
	c, fa := sluiceForwardAuth(t)
	check := startSluice(t)
	fa.Address = strings.Replace(fa.Address, "127.0.0.1:8082", check, 1)
	f := forwardAuth{cfg: fa, client: &http.Client{Timeout: 10 * time.Second}}
	defer f.client.CloseIdleConnections()
	noOverrides := c.HTTP.Middlewares["no-overrides"].Headers.CustomRequestHeaders

	// route passes a request through the router's middlewares, in order:
	// forwardAuth's answer when it refuses, else nil and r as the service
	// gets it.
	route := func(r *http.Request, remote string) *http.Response {
		t.Helper()
		for _, m := range c.HTTP.Routers["claims"].Middlewares {
			switch m {
			case "sluice":
				resp, err := f.ask(r, remote)
				if err != nil {
					t.Fatalf("asking /check: %v", err)
				}
				if resp != nil {
					return resp
				}
			case "no-overrides":
				for name, v := range noOverrides {
					if v == "" {
						r.Header.Del(name)
					}
				}
			default:
				t.Fatalf("router claims: middleware %s is not modelled", m)
			}
		}
		return nil
	}

	r, _ := http.NewRequest(http.MethodPost, "http://api.example/claims/7?x=1", nil)
	r.Header.Set("X-API-Key", partnerAKey)
	r.Header.Set("X-Sluice-Client", "partner-b")
	r.Header.Set("RateLimit", `"claims";r=1000;t=0`)
	r.Header.Set("X-Forwarded-Uri", "/free")
	r.Header.Set("X-HTTP-Method-Override", "DELETE")
	if resp := route(r, "198.51.100.20:40000"); resp != nil {
		t.Fatalf("partner-a: %d, want allowed", resp.StatusCode)
	}
	if got := r.Header.Values("X-Sluice-Client"); len(got) != 1 || got[0] != "partner-a" {
		t.Errorf("the service gets X-Sluice-Client %q, want partner-a alone", got)
	}
	if got := r.Header.Get("RateLimit-Policy"); got != `"claims";q=100;w=60` {
		t.Errorf("the service gets RateLimit-Policy %q", got)
	}
	if got := r.Header.Values("RateLimit"); len(got) != 1 || !strings.HasPrefix(got[0], `"claims";r=99;t=`) {
		t.Errorf("the service gets RateLimit %q, want sluice's alone (r=99: this request counted on claims)", got)
	}
	if got := r.Header.Get("X-HTTP-Method-Override"); got != "" {
		t.Errorf("the service gets X-HTTP-Method-Override %q", got)
	}

	anonymous := func(remote, xff string) *http.Response {
		r, _ := http.NewRequest(http.MethodGet, "http://api.example/claims/1", nil)
		if xff != "" {
			r.Header.Set("X-Forwarded-For", xff)
		}
		return route(r, remote)
	}
	for i := range 10 {
		if resp := anonymous("198.51.100.7:5000", "192.0.2."+strconv.Itoa(i)); resp != nil {
			t.Fatalf("anonymous request %d: %d, want allowed (plan anonymous: 10/m)", i, resp.StatusCode)
		}
	}
	resp := anonymous("198.51.100.7:5001", "192.0.2.99")
	if resp == nil {
		t.Fatal("the 11th anonymous request from one address was allowed: its own X-Forwarded-For was counted")
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	retry, _ := strconv.Atoi(resp.Header.Get("Retry-After"))
	if resp.StatusCode != 429 || retry < 1 || retry > 60 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("over the plan: %d, Retry-After %q, Content-Type %q; want 429, 1..60, problem+json",
			resp.StatusCode, resp.Header.Get("Retry-After"), resp.Header.Get("Content-Type"))
	}
	if got := resp.Header.Get("RateLimit"); got != fmt.Sprintf(`"claims";r=0;t=%d`, retry) {
		t.Errorf("RateLimit %q, want r=0 and t as Retry-After", got)
	}
	var prob struct {
		Status int
		Detail string
	}
	if err := json.Unmarshal(body, &prob); err != nil || prob.Status != 429 || !strings.Contains(prob.Detail, "198.51.100.7") {
		t.Errorf("problem %s (%v): want status 429 naming the address counted", body, err)
	}
	if resp := anonymous("198.51.100.8:5000", ""); resp != nil {
		t.Errorf("another address: %d, want allowed (counted apart)", resp.StatusCode)
	}
}

// partnerAKey is partner-a's key in the test (sluice.yaml reads it from
// PARTNER_A_KEY).
const partnerAKey = "traefik-test-key-a-4e1b9c"

// startSluice builds sluice, runs `sluice serve` with sluice.yaml on free
// ports and returns its /check address; it is stopped when the test ends.
func startSluice(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "sluice")
	build := exec.Command("go", "build", "-trimpath", "-o", bin, "./cmd/sluice")
	build.Dir = filepath.Join("..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/sluice: %v\n%s", err, out)
	}
	text := readFile(t, "sluice.yaml")
	for _, field := range []string{"http: ", "admin: "} {
		addr := field + "127.0.0.1:"
		if strings.Count(text, addr) != 1 {
			t.Fatalf("sluice.yaml has %q %d times, want once (the test listens on a free port instead)", addr, strings.Count(text, addr))
		}
		text = strings.Replace(text, addr, field+"127.0.0.1:0 #", 1)
	}
	cfg := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfg, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs lockedBuffer
	cmd := exec.Command(bin, "serve", "--config", cfg)
	cmd.Env = append(os.Environ(), "PARTNER_A_KEY="+partnerAKey)
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("sluice's log:\n%s", logs.String())
		}
	})
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var l struct{ Msg, Check string }
			if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "sluice serving" && l.Check != "" {
				return l.Check
			}
		}
		select {
		case <-exited:
			t.Fatalf("sluice serve exited:\n%s", logs.String())
		default:
		}
	}
	t.Fatalf("no serving line with a check address from sluice within 20s:\n%s", logs.String())
	return ""
}

// lockedBuffer collects a process's stderr while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestTraefikRecipeInDocs: docs/decide.md shows dynamic.yaml as it is.
func TestTraefikRecipeInDocs(t *testing.T) {
	doc := readFile(t, filepath.Join("..", "..", "docs", "decide.md"))
	_, section, ok := strings.Cut(doc, "### Traefik\n")
	_, block, ok2 := strings.Cut(section, "```yaml\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("docs/decide.md has no yaml block under ### Traefik")
	}
	if want := readFile(t, "dynamic.yaml"); block != want {
		t.Errorf("docs/decide.md's Traefik configuration:\n%s\ndeploy/traefik/dynamic.yaml:\n%s", block, want)
	}
}
