package deploy

import (
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
)

// stickyRecipe is nginx in front of several sluice instances on their own
// memory, each caller sent to one of them by its access key (else its
// address), with consistent hashing; docs/distributed.md shows it.
const stickyRecipe = "nginx/sluice-sticky.conf"

// stickyServers and stickyListen are the recipe's example lines the tests
// replace with their own addresses.
const (
	stickyServers = "  server 127.0.0.1:8081;\n  server 127.0.0.1:8082;\n  server 127.0.0.1:8083;\n"
	stickyListen  = "listen 80;"
)

// nginxAround is the rest of an nginx configuration around a recipe for
// the http block, with a test's temporary paths: one worker process (the
// master's own), so that round robin is one rotation.
const nginxAround = `daemon off;
master_process off;
pid {dir}/nginx.pid;
error_log {dir}/error.log warn;
events { worker_connections 256; }
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

// stickyConf returns deploy/nginx/sluice-sticky.conf with servers (host:port
// each) in its upstream block and listen as its address; plain drops
// consistent (nginx's hash modulo the servers) and roundRobin the hash
// altogether (nginx's default), to show what each changes.
func stickyConf(t *testing.T, servers []string, listen string, plain, roundRobin bool) string {
	t.Helper()
	b, err := os.ReadFile(stickyRecipe)
	if err != nil {
		t.Fatal(err)
	}
	recipe := string(b)
	const hash = "  hash $sluice_route consistent;\n"
	for _, s := range []string{stickyServers, stickyListen, hash} {
		if n := strings.Count(recipe, s); n != 1 {
			t.Fatalf("deploy/%s has %q %d times, want once (the test replaces it)", stickyRecipe, s, n)
		}
	}
	var lines strings.Builder
	for _, s := range servers {
		fmt.Fprintf(&lines, "  server %s;\n", s)
	}
	switch {
	case roundRobin:
		recipe = strings.Replace(recipe, hash, "", 1)
	case plain:
		recipe = strings.Replace(recipe, hash, "  hash $sluice_route;\n", 1)
	}
	return strings.NewReplacer(stickyServers, lines.String(), stickyListen, "listen "+listen+";").Replace(recipe)
}

// startNginxConf runs a real nginx with the http-block recipe (its listen
// line naming {listen}) from a temporary prefix and returns its address.
// The port was free a moment before; another process may take it first,
// so a failed start is tried again on another one.
func startNginxConf(t *testing.T, recipe func(listen string) string) string {
	t.Helper()
	bin, err := exec.LookPath("nginx")
	if err != nil {
		if _, serr := os.Stat("/usr/sbin/nginx"); serr != nil {
			t.Fatal("nginx not found: the sticky-session tests need Debian's nginx (make deps installs it)")
		}
		bin = "/usr/sbin/nginx"
	}
	var lastLog string
	for range 5 {
		dir := t.TempDir()
		listen := freeAddr(t)
		conf := strings.NewReplacer("{dir}", dir, "{recipe}", recipe(listen)).Replace(nginxAround)
		path := filepath.Join(dir, "nginx.conf")
		if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log"))
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
		if err := cmd.Start(); err != nil {
			t.Fatalf("start nginx: %v", err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if listening(listen, exited) {
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

// listening waits until addr takes connections (true) or the process has
// exited (false), for at most 10s.
func listening(addr string, exited <-chan struct{}) bool {
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

// freeAddr returns a 127.0.0.1 address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// stickyConfig is each instance's sluice.yaml: its own memory, nginx
// trusted for X-Forwarded-For, three partners and anonymous callers
// (counted per address) at 100 requests an hour, on the exact sliding_log
// so that no window boundary during the test can admit more.
const stickyConfig = `listen: 127.0.0.1:0
admin: 127.0.0.1:0
upstream: %s
store: { type: memory }
trusted_proxies: [127.0.0.1]
clients:
  key_header: X-API-Key
  unknown: anonymous
  list:
    - { id: partner-a, keys: [sticky-key-a-4c1d] }
    - { id: partner-b, keys: [sticky-key-b-9e2f] }
    - { id: partner-c, keys: [sticky-key-c-07ab] }
rules:
  - name: claims
    match: { path: /claims }
    key: client
    algorithm: sliding_log
    rate: 100/h
`

// stickyCallers are the callers of the sticky tests by id, with the key
// each sends ("" for none: counted by its address, as anonymous).
var stickyCallers = []struct{ id, key string }{
	{"partner-a", "sticky-key-a-4c1d"},
	{"partner-b", "sticky-key-b-9e2f"},
	{"partner-c", "sticky-key-c-07ab"},
	{"anonymous", ""},
}

// perClient counts, per X-Sluice-Client, the requests that reached one
// instance's upstream.
type perClient struct {
	mu   sync.Mutex
	hits map[string]int
}

func (p *perClient) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.hits[r.Header.Get("X-Sluice-Client")]++
	p.mu.Unlock()
	_, _ = io.WriteString(w, "claim 7: open\n")
}

func (p *perClient) count(client string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.hits[client]
}

// stickyFixture starts three `sluice serve` instances on their own memory,
// each in front of an upstream of its own (so that a test knows which
// instance let a request through), and nginx in front of them with the
// sticky recipe, or with round robin. It returns nginx's address and the
// upstreams.
func stickyFixture(t *testing.T, roundRobin bool) (string, []*perClient) {
	t.Helper()
	var servers []string
	var ups []*perClient
	for i := range 3 {
		up := &perClient{hits: map[string]int{}}
		srv := httptest.NewServer(up)
		t.Cleanup(srv.Close)
		cfg := filepath.Join(t.TempDir(), "sluice.yaml")
		if err := os.WriteFile(cfg, []byte(fmt.Sprintf(stickyConfig, srv.URL)), 0o600); err != nil {
			t.Fatal(err)
		}
		listen, _ := startSluice(t, cfg)
		servers = append(servers, listen)
		ups = append(ups, up)
		t.Logf("instance %d: %s", i, listen)
	}
	ngx := startNginxConf(t, func(listen string) string { return stickyConf(t, servers, listen, false, roundRobin) })
	return ngx, ups
}

// sendClaims sends n GET /claims/N through nginx at addr with key as
// X-API-Key (none if empty), one after another, and returns how many were
// answered 200 and 429; any other answer fails the test.
func sendClaims(t *testing.T, c *http.Client, addr, key string, n int) (ok, limited int) {
	for i := range n {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/claims/"+strconv.Itoa(i), nil)
		if key != "" {
			req.Header.Set("X-API-Key", key)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Errorf("request %d with key %q: %v", i, key, err)
			return
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			ok++
		case http.StatusTooManyRequests:
			limited++
		default:
			t.Errorf("request %d with key %q: %d, want 200 or 429", i, key, resp.StatusCode)
			return
		}
	}
	return ok, limited
}

// TestStickySessions: nginx with deploy/nginx/sluice-sticky.conf in front
// of three `sluice serve` instances, each counting in its own memory, 100
// requests an hour per caller. Three partners and a caller without a key
// send 300 requests each, at the same time: each gets exactly 100 through,
// all of them through one instance (its key's, or for the keyless caller
// its address's), and the upstreams together get exactly 400.
func TestStickySessions(t *testing.T) {
	ngx, ups := stickyFixture(t, false)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 10 * time.Second}
	t.Cleanup(c.CloseIdleConnections)
	var wg sync.WaitGroup
	got := make([][2]int, len(stickyCallers))
	for i, caller := range stickyCallers {
		wg.Go(func() { got[i][0], got[i][1] = sendClaims(t, c, ngx, caller.key, 300) })
	}
	wg.Wait()
	total := 0
	for i, caller := range stickyCallers {
		if got[i] != [2]int{100, 200} {
			t.Errorf("%s: %d of 300 allowed, %d limited; want exactly 100 and 200 (one instance holds its whole count)",
				caller.id, got[i][0], got[i][1])
		}
		var through []string
		for j, up := range ups {
			n := up.count(caller.id)
			total += n
			if n > 0 {
				through = append(through, fmt.Sprintf("instance %d: %d", j, n))
			}
		}
		if len(through) != 1 {
			t.Errorf("%s's allowed requests came through %v, want one instance", caller.id, through)
		}
		t.Logf("%s: %v", caller.id, through)
	}
	if total != 400 {
		t.Errorf("the upstreams got %d requests in all, want exactly 400 (100 per caller)", total)
	}
}

// TestRoundRobinWithoutSticky: the same three instances behind nginx's
// round robin (the recipe without its hash line): each instance holds its
// own 100 an hour, so a caller whose requests are spread over all three
// gets more than 100 through, up to 3×100 — why the instances need sticky
// sessions, or a shared store.
func TestRoundRobinWithoutSticky(t *testing.T) {
	ngx, ups := stickyFixture(t, true)
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 10 * time.Second}
	t.Cleanup(c.CloseIdleConnections)
	for _, caller := range stickyCallers[:3] {
		ok, limited := sendClaims(t, c, ngx, caller.key, 300)
		var per []int
		for j, up := range ups {
			n := up.count(caller.id)
			per = append(per, n)
			if n > 100 {
				t.Errorf("%s: instance %d let %d through, over its own 100", caller.id, j, n)
			}
		}
		if ok <= 100 || ok > 300 || ok+limited != 300 {
			t.Errorf("%s: %d of 300 allowed, %d limited; want more than 100 (spread over three instances) and at most 300",
				caller.id, ok, limited)
		}
		t.Logf("%s: %d of 300 allowed round robin, per instance %v", caller.id, ok, per)
	}
}

// nameServer answers every request with its own name in X-Backend.
func nameServer(t *testing.T, name string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Backend", name)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// routes sends one request for each of n distinct keys through nginx at
// addr and returns the X-Backend that answered each.
func routes(t *testing.T, addr string, n int) []string {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	out := make([]string, n)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
				req.Header.Set("X-API-Key", fmt.Sprintf("caller-%04d", i))
				resp, err := c.Do(req)
				if err != nil {
					t.Errorf("key %d: %v", i, err)
					return
				}
				resp.Body.Close()
				out[i] = resp.Header.Get("X-Backend")
			}
		})
	}
	wg.Wait()
	return out
}

// TestStickyRebalance measures what adding and removing an instance does
// to the callers of deploy/nginx/sluice-sticky.conf: 1000 distinct keys
// through nginx in front of three backends, then four (the fourth added),
// then three again without the first. With consistent hashing a key that
// moves moves only to the added backend, or only from the removed one, and
// about 1/4 of them move; nginx's plain hash (the servers modulo) moves
// most of them. The figures are logged (docs/distributed.md reports them).
func TestStickyRebalance(t *testing.T) {
	const keys = 1000
	names := []string{"b1", "b2", "b3", "b4"}
	addrs := map[string]string{}
	for _, n := range names {
		addrs[n] = nameServer(t, n)
	}
	servers := func(ns ...string) []string {
		var out []string
		for _, n := range ns {
			out = append(out, addrs[n])
		}
		return out
	}
	through := func(plain bool, ns ...string) []string {
		ngx := startNginxConf(t, func(listen string) string { return stickyConf(t, servers(ns...), listen, plain, false) })
		return routes(t, ngx, keys)
	}
	three, four, without1 := through(false, "b1", "b2", "b3"), through(false, "b1", "b2", "b3", "b4"), through(false, "b2", "b3", "b4")
	if t.Failed() {
		return
	}

	added := 0
	for i := range keys {
		if three[i] != four[i] {
			added++
			if four[i] != "b4" {
				t.Errorf("key %d moved from %s to %s when b4 was added, want to b4 or not at all", i, three[i], four[i])
			}
		}
	}
	removed := 0
	for i := range keys {
		switch {
		case four[i] == "b1":
			removed++
			if without1[i] == "b1" {
				t.Errorf("key %d still on b1 after its removal", i)
			}
		case without1[i] != four[i]:
			t.Errorf("key %d moved from %s to %s when b1 was removed, want it to stay", i, four[i], without1[i])
		}
	}
	// About 250 of 1000 (1/4): nginx places 160 points per server on its
	// ring, so a server's share varies by about 2 points of percentage.
	for what, n := range map[string]int{"adding b4": added, "removing b1": removed} {
		if n < keys*12/100 || n > keys*40/100 {
			t.Errorf("%s moved %d of %d keys, want about 1/4 (between 12%% and 40%%)", what, n, keys)
		}
	}

	plain3, plain4 := through(true, "b1", "b2", "b3"), through(true, "b1", "b2", "b3", "b4")
	plainMoved := 0
	for i := range keys {
		if plain3[i] != plain4[i] {
			plainMoved++
		}
	}
	if plainMoved <= keys/2 {
		t.Errorf("nginx's plain hash moved %d of %d keys from 3 servers to 4, want most (about 3/4)", plainMoved, keys)
	}
	share := map[string]int{}
	for _, b := range four {
		share[b]++
	}
	t.Logf("consistent hash, %d keys: 3 -> 4 servers moved %d (%.1f%%), all to the new one; removing one of 4 moved %d (%.1f%%), all from it; shares on 4: %v",
		keys, added, 100*float64(added)/keys, removed, 100*float64(removed)/keys, share)
	t.Logf("plain hash, %d keys: 3 -> 4 servers moved %d (%.1f%%)", keys, plainMoved, 100*float64(plainMoved)/keys)
}
