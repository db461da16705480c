package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

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

// serveConfigText is a config for the serve process: ports chosen by the
// kernel (the addresses are read from the "sluice serving" log line), the
// claims rule at rate.
func serveConfigText(upstream, rate string) string {
	return `listen: 127.0.0.1:0
admin: 127.0.0.1:0
upstream: ` + upstream + `
clients:
  list:
    - id: partner-a
      keys: [cmd-secret-key-a-91c2]
rules:
  - name: claims
    match: { path: /claims }
    algorithm: fixed_window
    rate: ` + rate + `
`
}

// replace writes content to path via a temp file and a rename.
func replace(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path+".tmp", []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

// poll checks cond every 20ms for up to 5s.
func poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// servingAddrs returns the listen and admin addresses of the
// "sluice serving" log line, once it is there.
func servingAddrs(logs string) (listen, admin string, ok bool) {
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var l struct{ Msg, Listen, Admin string }
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Msg == "sluice serving" {
			return l.Listen, l.Admin, true
		}
	}
	return "", "", false
}

// serveProcess is `sluice serve` running as a child process of a test.
type serveProcess struct {
	cmd           *exec.Cmd
	logs          *lockedBuffer // its stderr
	listen, admin string        // the addresses of its "sluice serving" log line
	exited        chan error    // cmd.Wait's result
	stopped       bool          // set by a test that has read exited
}

// startServe starts `sluice serve --config path` and waits for its serving
// log line. When the test ends, a process not stopped gets SIGTERM (and
// SIGKILL 10s later), and a failed test logs what sluice logged.
func startServe(t *testing.T, path string) *serveProcess {
	t.Helper()
	return startServeBinary(t, binary, path)
}

// startServeBinary is startServe with another sluice binary than the one
// TestMain built.
func startServeBinary(t *testing.T, bin, path string) *serveProcess {
	t.Helper()
	p := &serveProcess{cmd: exec.Command(bin, "serve", "--config", path), logs: &lockedBuffer{},
		exited: make(chan error, 1)}
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.exited <- p.cmd.Wait() }()
	t.Cleanup(func() {
		if !p.stopped {
			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-p.exited:
			case <-time.After(10 * time.Second):
				_ = p.cmd.Process.Kill()
				<-p.exited
			}
		}
		if t.Failed() {
			t.Logf("sluice's log:\n%s", p.logs.String())
		}
	})
	poll(t, "the serving log line", func() bool {
		var ok bool
		p.listen, p.admin, ok = servingAddrs(p.logs.String())
		return ok
	})
	return p
}

// terminate sends SIGTERM and fails the test unless sluice exits with
// status 0 within the given time.
func (p *serveProcess) terminate(t *testing.T, within time.Duration) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		p.stopped = true
		if err != nil {
			t.Errorf("after SIGTERM: %v, want exit code 0", err)
		}
	case <-time.After(within):
		t.Fatalf("sluice did not exit within %v of SIGTERM", within)
	}
}

type reply struct {
	status int
	policy string
	body   string
}

func fetch(t *testing.T, c *http.Client, method, url, key string) reply {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{resp.StatusCode, resp.Header.Get("RateLimit-Policy"), string(b)}
}

// reloads returns sluice_reloads_total{result} from the admin side.
func reloads(t *testing.T, c *http.Client, admin, result string) string {
	t.Helper()
	body := fetch(t, c, http.MethodGet, "http://"+admin+"/metrics", "").body
	prefix := fmt.Sprintf("sluice_reloads_total{result=%q} ", result)
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(line, prefix); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestServeProcess runs `sluice serve` as a real process: it serves, reloads
// on SIGHUP (a broken file is refused and serving goes on), and exits 0 on
// SIGTERM.
func TestServeProcess(t *testing.T) {
	var hits atomic.Int64
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		fmt.Fprintf(w, "claims service: %s for %s", r.URL.Path, r.Header.Get("X-Sluice-Client"))
	}))
	t.Cleanup(up.Close) // after sluice has stopped
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	replace(t, path, serveConfigText(up.URL, "100/m"))

	p := startServe(t, path)
	listen, admin, logs := p.listen, p.admin, p.logs
	c := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	defer c.CloseIdleConnections()
	if r := fetch(t, c, http.MethodGet, "http://"+admin+"/healthz", ""); r.status != http.StatusOK {
		t.Fatalf("/healthz: %d", r.status)
	}
	claims := "http://" + listen + "/claims/7"
	r := fetch(t, c, http.MethodGet, claims, "cmd-secret-key-a-91c2")
	if r.status != http.StatusOK || r.body != "claims service: /claims/7 for partner-a" || r.policy != `"claims";q=100;w=60` {
		t.Fatalf("through sluice: %d %q %q", r.status, r.body, r.policy)
	}
	if r := fetch(t, c, http.MethodGet, claims, "wrong-key"); r.status != http.StatusUnauthorized {
		t.Errorf("unknown key: %d, want 401", r.status)
	}

	// SIGHUP with the file unchanged: a reload that only the signal can
	// have caused (the file watcher sees nothing).
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll(t, "a reload after SIGHUP", func() bool { return reloads(t, c, admin, "ok") == "1" })

	replace(t, path, serveConfigText(up.URL, "3/m"))
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll(t, "the new policy (q=3)", func() bool {
		return fetch(t, c, http.MethodGet, claims, "cmd-secret-key-a-91c2").policy == `"claims";q=3;w=60`
	})

	replace(t, path, "rules: [ {name: claims, rate: lots} ]\n")
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll(t, "the broken file to be refused", func() bool { v := reloads(t, c, admin, "failed"); return v != "0" && v != "" })
	if r := fetch(t, c, http.MethodGet, claims, "cmd-secret-key-a-91c2"); r.policy != `"claims";q=3;w=60` {
		t.Errorf("after a broken file: %d %q, want the old policy q=3 still serving", r.status, r.policy)
	}
	if !strings.Contains(logs.String(), `"msg":"reload refused; previous configuration stays","file":"`+path+`","line":1,"col":31,"err":"rules[0].rate: `) {
		t.Errorf("the refused reload's log has no line naming %s, line 1, col 31 and rules[0].rate", path)
	}
	if strings.Contains(logs.String(), "cmd-secret-key-a-91c2") {
		t.Error("the access key appears in sluice's log")
	}

	c.CloseIdleConnections()
	p.terminate(t, 5*time.Second)
	if !strings.Contains(logs.String(), `"msg":"sluice stopped"`) {
		t.Error(`no "sluice stopped" log line`)
	}
}
