package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// logLines parses a process's JSON log lines with the message msg.
func logLines(t *testing.T, logs, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(logs) {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("log line is not JSON: %q", line)
		}
		if l["msg"] == msg {
			out = append(out, l)
		}
	}
	return out
}

// TestServeVersionAndDraining: the start-up line names sluice's version and
// the configuration's; SIGTERM logs "draining" with the requests in flight,
// which are answered before sluice exits.
func TestServeVersionAndDraining(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		arrived <- struct{}{}
		<-release
		w.WriteHeader(http.StatusOK)
	}))
	defer up.Close()
	defer close(release)
	path := writeFile(t, "sluice.yaml", serveConfigText(up.URL, "10/m"))
	p := startServe(t, path)
	printed, err := exec.Command(binary, "version").Output() // sluice VERSION ...
	if err != nil {
		t.Fatal(err)
	}
	version := strings.Fields(string(printed))[1]
	serving := logLines(t, p.logs.String(), "sluice serving")
	if v := serving[0]["version"]; v != version || serving[0]["config_version"] == nil {
		t.Errorf("serving line %v, want version %q and config_version", serving[0], version)
	}

	c := &http.Client{Transport: &http.Transport{}, Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	answered := make(chan int, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, "http://"+p.listen+"/claims/1", nil)
		req.Header.Set("X-API-Key", "cmd-secret-key-a-91c2")
		resp, err := c.Do(req)
		if err != nil {
			answered <- 0
			return
		}
		resp.Body.Close()
		answered <- resp.StatusCode
	}()
	<-arrived
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	poll(t, "the draining line", func() bool { return strings.Contains(p.logs.String(), `"msg":"draining"`) })
	if l := logLines(t, p.logs.String(), "draining")[0]; l["in_flight"] != 1.0 {
		t.Errorf("draining line %v, want in_flight 1", l)
	}
	release <- struct{}{} // the upstream answers the request in flight
	if code := <-answered; code != http.StatusOK {
		t.Errorf("the request in flight got %d, want 200", code)
	}
	select {
	case err := <-p.exited:
		p.stopped = true
		if err != nil {
			t.Errorf("after SIGTERM: %v, want exit 0", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sluice did not exit within 10s of the last answer")
	}
}

// TestServeLogLevel: --log-level leaves out the lines below it. The file
// has a warning and its listen address is taken, so serve logs a warning
// and an error, then exits 1.
func TestServeLogLevel(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	text := strings.Replace(serveConfigText("http://127.0.0.1:9", "10/m"), "listen: 127.0.0.1:0", "listen: "+taken.Addr().String(), 1) +
		"trusted_proxies: [0.0.0.0/0]\n"
	path := writeFile(t, "sluice.yaml", text)
	for level, want := range map[string][2]bool{"": {true, true}, "warn": {true, true}, "error": {false, true}, "debug": {true, true}} {
		args := []string{"serve", path}
		if level != "" {
			args = append(args, "--log-level", level)
		}
		out, err := exec.Command(binary, args...).CombinedOutput()
		if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
			t.Fatalf("sluice %v: %v, want exit 1\n%s", args, err, out)
		}
		logs := string(out)
		warned, failed := len(logLines(t, logs, "configuration warning")) > 0, len(logLines(t, logs, "sluice stopped")) > 0
		if [2]bool{warned, failed} != want {
			t.Errorf("--log-level %q: warning logged %v, error logged %v; want %v\n%s", level, warned, failed, want, logs)
		}
	}
}
