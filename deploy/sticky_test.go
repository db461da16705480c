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

// The sticky-session recipes: nginx or HAProxy in front of several sluice
// instances on their own memory, each caller sent to one of them by its
// access key (else its address), with consistent hashing;
// docs/distributed.md shows them.
const (
	stickyRecipe  = "nginx/sluice-sticky.conf"
	stickyHAProxy = "haproxy/sluice-sticky.cfg"
)

// backend is one server of a front's upstream: HAProxy's id for it, and
// its address.
type backend struct {
	id   int
	addr string
}

// A front is nginx or HAProxy with its sticky recipe in front of servers,
// changed by variant: "" (the recipe as it is), "roundrobin" (without its
// hash: the proxy's default), "plain" (nginx's hash without consistent:
// the servers modulo), "auto-ids" (HAProxy's servers without their ids:
// numbered by their place in the list). It returns the front's address.
type front func(t *testing.T, servers []backend, variant string) string

var fronts = []struct {
	name  string
	start front
}{{"nginx", startStickyNginx}, {"haproxy", startStickyHAProxy}}

// recipe returns deploy/name with each of the example lines given
// replaced, after checking that each is in it once.
func recipe(t *testing.T, name string, replace ...string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(replace); i += 2 {
		if n := strings.Count(string(b), replace[i]); n != 1 {
			t.Fatalf("deploy/%s has %q %d times, want once (the test replaces it)", name, replace[i], n)
		}
	}
	return strings.NewReplacer(replace...).Replace(string(b))
}

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

// startStickyNginx runs a real nginx with deploy/nginx/sluice-sticky.conf.
func startStickyNginx(t *testing.T, servers []backend, variant string) string {
	t.Helper()
	bin := binary(t, "nginx", "Debian's nginx")
	const hash = "  hash $sluice_route consistent;\n"
	hashTo := map[string]string{"": hash, "roundrobin": "", "plain": "  hash $sluice_route;\n"}[variant]
	var lines strings.Builder
	for _, s := range servers {
		fmt.Fprintf(&lines, "  server %s;\n", s.addr)
	}
	return startProxy(t, "nginx", func(dir, listen string) (string, []string) {
		conf := recipe(t, stickyRecipe,
			"  server 127.0.0.1:8081;\n  server 127.0.0.1:8082;\n  server 127.0.0.1:8083;\n", lines.String(),
			"listen 80;", "listen "+listen+";", hash, hashTo)
		conf = strings.NewReplacer("{dir}", dir, "{recipe}", conf).Replace(nginxAround)
		path := filepath.Join(dir, "nginx.conf")
		return conf, []string{bin, "-p", dir, "-c", path, "-e", filepath.Join(dir, "error.log")}
	})
}

// startStickyHAProxy runs a real HAProxy with deploy/haproxy/sluice-sticky.cfg.
func startStickyHAProxy(t *testing.T, servers []backend, variant string) string {
	t.Helper()
	bin := binary(t, "haproxy", "Debian's haproxy")
	const balance = "  balance hash var(txn.sluice_route)\n  hash-type consistent\n"
	balanceTo := map[string]string{"": balance, "roundrobin": "", "auto-ids": balance}[variant]
	var lines strings.Builder
	for _, s := range servers {
		if variant == "auto-ids" {
			fmt.Fprintf(&lines, "  server sluice%d %s\n", s.id, s.addr)
		} else {
			fmt.Fprintf(&lines, "  server sluice%d %s id %d\n", s.id, s.addr, s.id)
		}
	}
	return startProxy(t, "haproxy", func(dir, listen string) (string, []string) {
		conf := recipe(t, stickyHAProxy,
			"  server sluice1 127.0.0.1:8081 id 1\n  server sluice2 127.0.0.1:8082 id 2\n  server sluice3 127.0.0.1:8083 id 3\n", lines.String(),
			"  bind :80\n", "  bind "+listen+"\n", balance, balanceTo)
		return conf, []string{bin, "-db", "-f", filepath.Join(dir, "haproxy.cfg")}
	})
}

// binary returns the path of the command name, failing the test (never
// skipping it) when there is none: make deps installs it.
func binary(t *testing.T, name, what string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	if _, err := os.Stat("/usr/sbin/" + name); err != nil {
		t.Fatalf("%s not found: the sticky-session tests need %s (make deps installs it)", name, what)
	}
	return "/usr/sbin/" + name
}

// startProxy writes the configuration conf returns for a temporary
// directory and a listen address into that directory (as name.conf, or
// haproxy.cfg), runs the command it returns until the test ends, and
// returns the address once the proxy takes connections. The port was free
// a moment before; another process may take it first, so a failed start
// is tried again on another one.
func startProxy(t *testing.T, name string, conf func(dir, listen string) (string, []string)) string {
	t.Helper()
	var lastOut string
	for range 5 {
		dir := t.TempDir()
		listen := freeAddr(t)
		text, argv := conf(dir, listen)
		file := map[string]string{"nginx": "nginx.conf", "haproxy": "haproxy.cfg"}[name]
		if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		var out lockedBuffer
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		if listening(listen, exited) {
			t.Cleanup(func() {
				_ = cmd.Process.Signal(syscall.SIGTERM)
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
		lastOut = out.String() + string(b)
	}
	t.Fatalf("%s did not start; its last output:\n%s", name, lastOut)
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
// instance let a request through), and the front before them, as changed
// by variant. It returns the front's address and the upstreams.
func stickyFixture(t *testing.T, start front, variant string) (string, []*perClient) {
	t.Helper()
	var servers []backend
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
		servers = append(servers, backend{i + 1, listen})
		ups = append(ups, up)
	}
	return start(t, servers, variant), ups
}

// sendClaims sends n GET /claims/N through the front at addr with key as
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

func newStickyClient(t *testing.T) *http.Client {
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 10 * time.Second}
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// TestStickySessions: nginx with deploy/nginx/sluice-sticky.conf, and
// HAProxy with deploy/haproxy/sluice-sticky.cfg, in front of three `sluice
// serve` instances, each counting in its own memory, 100 requests an hour
// per caller. Three partners and a caller without a key send 300 requests
// each, at the same time: each gets exactly 100 through, all of them
// through one instance (its key's, or for the keyless caller its
// address's), and the upstreams together get exactly 400.
func TestStickySessions(t *testing.T) {
	for _, f := range fronts {
		t.Run(f.name, func(t *testing.T) {
			addr, ups := stickyFixture(t, f.start, "")
			c := newStickyClient(t)
			var wg sync.WaitGroup
			got := make([][2]int, len(stickyCallers))
			for i, caller := range stickyCallers {
				wg.Go(func() { got[i][0], got[i][1] = sendClaims(t, c, addr, caller.key, 300) })
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
						through = append(through, fmt.Sprintf("instance %d: %d", j+1, n))
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
		})
	}
}

// TestRoundRobinWithoutSticky: the same three instances behind the front's
// round robin (the recipe without its hash): each instance holds its own
// 100 an hour, so a caller whose requests are spread over all three gets
// more than 100 through, up to 3×100 — why the instances need sticky
// sessions, or a shared store.
func TestRoundRobinWithoutSticky(t *testing.T) {
	for _, f := range fronts {
		t.Run(f.name, func(t *testing.T) {
			addr, ups := stickyFixture(t, f.start, "roundrobin")
			c := newStickyClient(t)
			for _, caller := range stickyCallers[:3] {
				ok, limited := sendClaims(t, c, addr, caller.key, 300)
				var per []int
				for j, up := range ups {
					n := up.count(caller.id)
					per = append(per, n)
					if n > 100 {
						t.Errorf("%s: instance %d let %d through, over its own 100", caller.id, j+1, n)
					}
				}
				if ok <= 100 || ok > 300 || ok+limited != 300 {
					t.Errorf("%s: %d of 300 allowed, %d limited; want more than 100 (spread over three instances) and at most 300",
						caller.id, ok, limited)
				}
				t.Logf("%s: %d of 300 allowed round robin, per instance %v", caller.id, ok, per)
			}
		})
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

// routes sends one request for each of n distinct keys through the front
// at addr and returns the X-Backend that answered each.
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

// moved counts the keys routed differently in a and b.
func moved(a, b []string) int {
	n := 0
	for i := range a {
		if a[i] != b[i] {
			n++
		}
	}
	return n
}

// TestStickyRebalance measures what adding and removing an instance does
// to the callers of each sticky recipe: 1000 distinct keys through the
// front before three backends, then four (the fourth added), then three
// again without the first. With consistent hashing a key that moves moves
// only to the added backend, or only from the removed one, and about 1/4
// of them move. nginx's hash without consistent (the servers modulo)
// moves most of them, and so does HAProxy's consistent hash when removing
// the first server renumbers the others (servers without their id). The
// figures are logged; docs/distributed.md reports them.
func TestStickyRebalance(t *testing.T) {
	const keys = 1000
	var all []backend
	for i := range 4 {
		all = append(all, backend{i + 1, nameServer(t, fmt.Sprintf("b%d", i+1))})
	}
	for _, f := range fronts {
		t.Run(f.name, func(t *testing.T) {
			through := func(variant string, servers ...backend) []string {
				return routes(t, f.start(t, servers, variant), keys)
			}
			three, four, without1 := through("", all[:3]...), through("", all...), through("", all[1:]...)
			if t.Failed() {
				return
			}
			added, removed := moved(three, four), 0
			for i := range keys {
				if three[i] != four[i] && four[i] != "b4" {
					t.Errorf("key %d moved from %s to %s when b4 was added, want to b4 or not at all", i, three[i], four[i])
				}
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
			// About 250 of 1000 (1/4); 20.6% to 30.2% seen over 31 runs of
			// nginx, whose ring depends on the servers' addresses.
			for what, n := range map[string]int{"adding b4": added, "removing b1": removed} {
				if n < keys*12/100 || n > keys*40/100 {
					t.Errorf("%s moved %d of %d keys, want about 1/4 (between 12%% and 40%%)", what, n, keys)
				}
			}
			share := map[string]int{}
			for _, b := range four {
				share[b]++
			}
			t.Logf("consistent hash, %d keys: 3 -> 4 servers moved %d (%.1f%%), all to the new one; removing the first of 4 moved %d (%.1f%%), all from it; shares on 4: %v",
				keys, added, 100*float64(added)/keys, removed, 100*float64(removed)/keys, share)

			switch f.name {
			case "nginx":
				n := moved(through("plain", all[:3]...), through("plain", all...))
				if n <= keys/2 {
					t.Errorf("nginx's hash without consistent moved %d of %d keys from 3 servers to 4, want most (about 3/4)", n, keys)
				}
				t.Logf("nginx's hash without consistent, %d keys: 3 -> 4 servers moved %d (%.1f%%)", keys, n, 100*float64(n)/keys)
			case "haproxy":
				n := moved(through("auto-ids", all...), through("auto-ids", all[1:]...))
				if n <= removed {
					t.Errorf("HAProxy without server ids: removing the first of 4 moved %d of %d keys, want more than with ids (%d)", n, keys, removed)
				}
				t.Logf("HAProxy without server ids, %d keys: removing the first of 4 moved %d (%.1f%%)", keys, n, 100*float64(n)/keys)
			}
		})
	}
}

// TestStickyMove measures the bound at a move: four `sluice serve`
// instances on their own memory, 100 requests an hour per partner, nginx
// with the recipe before the first three, then before all four (the fourth
// added). A partner whose key the fourth takes over has had its 100 on its
// old instance and gets 100 more on the new one, which starts afresh: 200
// in the hour, twice the limit, no more. Sent back to its old instance (the
// fourth removed again) it gets nothing more: that counter still holds its
// 100. A partner that does not move gets 100 in all.
func TestStickyMove(t *testing.T) {
	var clients strings.Builder
	for i := range 40 {
		fmt.Fprintf(&clients, "    - { id: p%02d, keys: [move-key-%02d] }\n", i, i)
	}
	cfg := strings.Replace(stickyConfig, `    - { id: partner-a, keys: [sticky-key-a-4c1d] }
    - { id: partner-b, keys: [sticky-key-b-9e2f] }
    - { id: partner-c, keys: [sticky-key-c-07ab] }
`, clients.String(), 1)
	var servers []backend
	var ups []*perClient
	for i := range 4 {
		up := &perClient{hits: map[string]int{}}
		srv := httptest.NewServer(up)
		t.Cleanup(srv.Close)
		path := filepath.Join(t.TempDir(), "sluice.yaml")
		if err := os.WriteFile(path, []byte(fmt.Sprintf(cfg, srv.URL)), 0o600); err != nil {
			t.Fatal(err)
		}
		listen, _ := startSluice(t, path)
		servers = append(servers, backend{i + 1, listen})
		ups = append(ups, up)
	}
	three, four := startStickyNginx(t, servers[:3], ""), startStickyNginx(t, servers, "")
	c := newStickyClient(t)

	// Where each key goes through the four: /probe matches no rule, so it
	// counts nothing; the upstream that sees it names the instance.
	instanceOf := func(front string, i int) int {
		req, _ := http.NewRequest(http.MethodGet, "http://"+front+"/probe", nil)
		req.Header.Set("X-API-Key", fmt.Sprintf("move-key-%02d", i))
		before := make([]int, len(ups))
		for j, up := range ups {
			before[j] = up.count(fmt.Sprintf("p%02d", i))
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		for j, up := range ups {
			if up.count(fmt.Sprintf("p%02d", i)) > before[j] {
				return j + 1
			}
		}
		t.Fatalf("key %d: no upstream saw the probe", i)
		return 0
	}
	movedKey, stayedKey := -1, -1
	for i := range 40 {
		switch on := instanceOf(four, i); {
		case on == 4 && movedKey < 0:
			movedKey = i
		case on != 4 && stayedKey < 0 && instanceOf(three, i) == on:
			stayedKey = i
		}
	}
	if movedKey < 0 || stayedKey < 0 {
		t.Fatalf("of 40 keys, none moved to the fourth instance (%d) or none stayed (%d)", movedKey, stayedKey)
	}

	for _, tc := range []struct {
		what string
		key  int
		want [3]int // allowed of 150 through three, then four, then three again
	}{
		{"moved to the added instance", movedKey, [3]int{100, 100, 0}},
		{"not moved", stayedKey, [3]int{100, 0, 0}},
	} {
		key := fmt.Sprintf("move-key-%02d", tc.key)
		var got [3]int
		for step, front := range []string{three, four, three} {
			got[step], _ = sendClaims(t, c, front, key, 150)
		}
		if got != tc.want {
			t.Errorf("a partner %s: allowed %v of 150 through three instances, then four, then three again; want %v",
				tc.what, got, tc.want)
		}
		t.Logf("a partner %s: allowed %v of 150 through three instances, then four, then three again (%d in the hour, at 100/h)",
			tc.what, got, got[0]+got[1]+got[2])
	}
}
