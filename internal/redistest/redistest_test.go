package redistest

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"
)

// ping sends PING to addr and fails the test unless it gets PONG.
func ping(t *testing.T, addr string) {
	t.Helper()
	reply, err := roundTrip(addr, time.Second, "PING")
	if err != nil {
		t.Fatal(err)
	}
	if reply != "PONG" {
		t.Fatalf("PING on %s = %q, want PONG", addr, reply)
	}
}

func TestServerPauseStopRestart(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	ping(t, s.Addr)

	s.Pause()
	_, err := roundTrip(s.Addr, 200*time.Millisecond, "PING")
	var netErr net.Error
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("PING on a paused server: got error %v, want a timeout", err)
	}
	s.Resume()
	ping(t, s.Addr)

	addr := s.Addr
	s.Pause() // SIGKILL must end a hung server too
	s.Stop()
	s.Stop() // idempotent
	if _, err := roundTrip(addr, 200*time.Millisecond, "PING"); err == nil {
		t.Fatal("PING on a stopped server succeeded")
	}
	s.Restart(t)
	if s.Addr != addr {
		t.Fatalf("Restart moved the server from %s to %s", addr, s.Addr)
	}
	ping(t, s.Addr)
}

func TestRestartWaitsForBusyPort(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	s.Stop()
	squatter, err := net.Listen("tcp", s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	release := time.AfterFunc(150*time.Millisecond, func() { squatter.Close() })
	defer release.Stop()
	s.Restart(t)
	ping(t, s.Addr)
}

func TestStartServerPassesArgs(t *testing.T) {
	t.Parallel()
	s := StartServer(t, "--maxmemory", "1mb")
	info, err := roundTrip(s.Addr, time.Second, "INFO", "memory")
	if err != nil {
		t.Fatal(err)
	}
	if got := infoField(info, "maxmemory"); got != "1048576" {
		t.Fatalf("maxmemory = %q, want 1048576", got)
	}
}

func TestCluster(t *testing.T) {
	t.Parallel()
	c := StartCluster(t)
	if len(c.Addrs) != 3 || len(c.Nodes) != 3 {
		t.Fatalf("cluster has %d addrs and %d nodes, want 3 and 3", len(c.Addrs), len(c.Nodes))
	}
	for i, addr := range c.Addrs {
		if c.Nodes[i].Addr != addr {
			t.Errorf("Addrs[%d] = %s, Nodes[%d].Addr = %s", i, addr, i, c.Nodes[i].Addr)
		}
		info, err := roundTrip(addr, time.Second, "CLUSTER", "INFO")
		if err != nil {
			t.Fatal(err)
		}
		if got := infoField(info, "cluster_state"); got != "ok" {
			t.Errorf("node %s: cluster_state = %q, want ok", addr, got)
		}
		if got := infoField(info, "cluster_slots_assigned"); got != "16384" {
			t.Errorf("node %s: cluster_slots_assigned = %q, want 16384", addr, got)
		}
	}
}

func TestScriptCalls(t *testing.T) {
	t.Parallel()
	s := StartServer(t)
	if got := ScriptCalls(t, s.Addr); got != 0 {
		t.Fatalf("ScriptCalls on a fresh server = %d, want 0", got)
	}
	if reply, err := roundTrip(s.Addr, time.Second, "EVAL", "return 1", "0"); err != nil || reply != "1" {
		t.Fatalf("EVAL: %q, %v; want 1", reply, err)
	}
	sha, err := roundTrip(s.Addr, time.Second, "SCRIPT", "LOAD", "return 2")
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if reply, err := roundTrip(s.Addr, time.Second, "EVALSHA", sha, "0"); err != nil || reply != "2" {
			t.Fatalf("EVALSHA: %q, %v; want 2", reply, err)
		}
	}
	if got := ScriptCalls(t, s.Addr, s.Addr); got != 6 {
		t.Fatalf("ScriptCalls of 1 EVAL and 2 EVALSHA, counted on the same server twice = %d, want 6", got)
	}
}

func TestKeyPrefix(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		p := KeyPrefix(t)
		if !strings.HasPrefix(p, "sluicetest:") || !strings.HasSuffix(p, ":") {
			t.Fatalf("KeyPrefix = %q, want sluicetest:<hex>:", p)
		}
		if seen[p] {
			t.Fatalf("KeyPrefix returned %q twice", p)
		}
		seen[p] = true
	}
}

// fatalRecorder is a testing.TB whose Fatal records the message and ends
// the goroutine, as the real one does, without failing the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatal(args ...any) {
	f.msg = fmt.Sprint(args...)
	runtime.Goexit()
}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// fatalMessage runs start with a fatalRecorder and returns what it was
// failed with, or "" if it returned normally.
func fatalMessage(t *testing.T, start func(testing.TB)) string {
	rec := &fatalRecorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		start(rec)
	}()
	<-done
	return rec.msg
}

func TestStartServerFailsWithoutRedis(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	msg := fatalMessage(t, func(tb testing.TB) { StartServer(tb) })
	if !strings.Contains(msg, "make test") {
		t.Fatalf("StartServer without redis-server on PATH: got fatal %q, want one saying to run `make test`", msg)
	}
}

func TestStartServerFailureQuotesLog(t *testing.T) {
	t.Parallel()
	msg := fatalMessage(t, func(tb testing.TB) { StartServer(tb, "--no-such-directive", "x") })
	if !strings.Contains(msg, "no-such-directive") {
		t.Fatalf("StartServer with a bad argument: got fatal %q, want redis-server's complaint quoted", msg)
	}
}
