// Package redistest starts real redis-server processes for tests: a
// standalone server on a free loopback port, or a three-master Redis
// Cluster. Servers keep nothing on disk outside the test's temporary
// directory, and every process is killed and waited for in t.Cleanup.
//
// Tests share a server safely by giving every key a KeyPrefix instead of
// flushing the database.
//
// The package needs redis-server on PATH; `make test` installs it. Without
// it the tests fail rather than skip, so a missing Redis cannot pass for a
// green run.
package redistest

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
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

const (
	// startTimeout bounds how long a start waits for a server to answer.
	startTimeout = 10 * time.Second
	// exitTimeout bounds how long Stop waits for a killed server to exit.
	exitTimeout = 10 * time.Second
	// portAttempts is how many ports StartServer tries, and how many times
	// Restart retries its port, when another process holds the port.
	portAttempts = 5
	// pollInterval is the pause between readiness probes.
	pollInterval = 10 * time.Millisecond
	// logTailLines is how much of redis-server's output a failure quotes.
	logTailLines = 20
)

// errPortInUse reports that redis-server exited because its port was taken.
var errPortInUse = errors.New("port already in use")

// Server is one redis-server process on a free loopback port.
//
// Its methods are safe for concurrent use; each holds the server for its
// whole duration, so a Pause waits for a Restart in progress to finish.
type Server struct {
	// Addr is the server's address, "127.0.0.1:port". It stays the same
	// across Stop and Restart.
	Addr string

	tb      testing.TB // the test that started it: owns dir, gets errors
	bin     string     // path of redis-server
	dir     string     // the test's temp dir: working dir, log, any data files
	cluster bool       // run as a cluster node
	args    []string   // arguments after the package's own

	mu   sync.Mutex
	cmd  *exec.Cmd     // the current process; nil before the first start
	done chan struct{} // closed once cmd has exited and been waited for
}

// StartServer starts a standalone redis-server with no persistence on a free
// loopback port, and waits until it answers PING. args are passed to
// redis-server after the package's own ("--maxmemory", "1mb", ...); they
// must not set port, bind, dir or persistence. The server is killed when the
// test and its subtests end.
//
// If redis-server is not on PATH, or does not answer within 10 seconds,
// StartServer calls t.Fatal.
func StartServer(t testing.TB, args ...string) *Server {
	t.Helper()
	return startServer(t, false, args)
}

// startServer starts a server on a fresh port, retrying with another port
// when one turns out to be taken. With cluster set, the server is a cluster
// node and its cluster bus port (port+10000) must be free too.
func startServer(t testing.TB, cluster bool, args []string) *Server {
	t.Helper()
	s := &Server{tb: t, bin: lookPath(t, "redis-server"), dir: t.TempDir(), cluster: cluster, args: args}
	t.Cleanup(s.Stop) // after TempDir's, so it runs first: kill, then remove
	s.mu.Lock()
	defer s.mu.Unlock()
	deadline := time.Now().Add(startTimeout)
	var err error
	for range portAttempts {
		port, perr := freePort(cluster)
		if perr != nil {
			t.Fatal(perr)
		}
		s.Addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		if err = s.startLocked(deadline); !errors.Is(err, errPortInUse) {
			break
		}
	}
	if err != nil {
		t.Fatal(s.failure(err))
	}
	return s
}

// Stop kills the server with SIGKILL, as a crash would, and waits for the
// process to exit. Stopping a stopped server does nothing.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.stopLocked(); err != nil {
		s.tb.Error(err)
	}
}

// Pause freezes the server with SIGSTOP, as a hung Redis would be: it keeps
// accepting connections but answers nothing until Resume.
func (s *Server) Pause() {
	s.signal("pause", syscall.SIGSTOP)
}

// Resume lets a paused server run again with SIGCONT.
func (s *Server) Resume() {
	s.signal("resume", syscall.SIGCONT)
}

// Restart starts the server again on the same port, after Stop or as if
// after a crash: a running server is stopped first. It retries for about a
// second if another process briefly holds the port, waits until the server
// answers PING, and calls t.Fatal if it does not within 10 seconds. A
// cluster node keeps its node ID and slots, as they live in its temp dir.
// The server is still killed when the test that started it ends.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.stopLocked(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(startTimeout)
	var err error
	for attempt := range portAttempts {
		if err = s.startLocked(deadline); !errors.Is(err, errPortInUse) {
			break
		}
		time.Sleep(time.Duration(attempt+1) * 100 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(s.failure(fmt.Errorf("restart: %w", err)))
	}
}

// KeyPrefix returns a random key prefix for one test, "sluicetest:<hex>:",
// so tests sharing a server never see each other's keys and never need
// FLUSHDB.
func KeyPrefix(t testing.TB) string {
	t.Helper()
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails: crypto/rand crashes the program instead
	return "sluicetest:" + hex.EncodeToString(b[:]) + ":"
}

// lookPath finds a Redis binary or fails the test, saying how to get it.
func lookPath(t testing.TB, name string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("redistest: %s not found on PATH (%v); run `make test`, which installs Redis", name, err)
	}
	return path
}

// argv returns redis-server's arguments: the package's own, then s.args.
func (s *Server) argv() []string {
	_, port, _ := net.SplitHostPort(s.Addr)
	argv := []string{
		"--port", port,
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--dbfilename", "dump.rdb",
		"--save", "",
		"--appendonly", "no",
		"--daemonize", "no",
	}
	if s.cluster {
		argv = append(argv,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(s.dir, "nodes.conf"))
	}
	return append(argv, s.args...)
}

// logPath is where redis-server's stdout and stderr go, appended across
// restarts.
func (s *Server) logPath() string {
	return filepath.Join(s.dir, "redis.log")
}

// startLocked starts redis-server on s.Addr and waits until it answers, or
// until deadline. It returns an error wrapping errPortInUse if the server
// exited because the port was taken. On failure no process is left running.
func (s *Server) startLocked(deadline time.Time) error {
	logFile, err := os.OpenFile(s.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log: %w", err)
	}
	logStart, _ := logFile.Seek(0, io.SeekEnd)
	cmd := exec.Command(s.bin, s.argv()...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile // files need no copying goroutines
	cmd.SysProcAttr = sysProcAttr()
	err = cmd.Start()
	logFile.Close() // the child holds its own descriptor
	if err != nil {
		return fmt.Errorf("start %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() { // ends when the process does; Stop waits for it
		_ = cmd.Wait() // a killed server's exit status tells nothing
		close(done)
	}()
	s.cmd, s.done = cmd, done
	if err := s.waitReady(deadline, logStart); err != nil {
		if stopErr := s.stopLocked(); stopErr != nil {
			return errors.Join(err, stopErr)
		}
		return err
	}
	return nil
}

// waitReady polls the server until it answers PING as the process just
// started, the process exits, or deadline passes. logStart is where this
// start's output begins in the log.
func (s *Server) waitReady(deadline time.Time, logStart int64) error {
	pid := strconv.Itoa(s.cmd.Process.Pid)
	var lastErr error
	for {
		select {
		case <-s.done:
			if strings.Contains(s.logSince(logStart), "Address already in use") {
				return fmt.Errorf("redis-server exited: %w", errPortInUse)
			}
			return fmt.Errorf("redis-server exited during startup: %s", s.cmd.ProcessState)
		default:
		}
		if lastErr = probe(s.Addr, pid); lastErr == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("no answer within %v: %w", startTimeout, lastErr)
		}
		time.Sleep(pollInterval)
	}
}

// probe checks that the server at addr answers PING and is process pid,
// not some other server that won the race for the port.
func probe(addr, pid string) error {
	const timeout = 500 * time.Millisecond
	if reply, err := roundTrip(addr, timeout, "PING"); err != nil {
		return err
	} else if reply != "PONG" {
		return fmt.Errorf("redistest: PING on %s: got %q, want PONG", addr, reply)
	}
	info, err := roundTrip(addr, timeout, "INFO", "server")
	if err != nil {
		return err
	}
	if got := infoField(info, "process_id"); got != pid {
		return fmt.Errorf("redistest: %s is process %s, not the redis-server just started (%s)", addr, got, pid)
	}
	return nil
}

// stopLocked kills the current process, if any, and waits for it to exit.
func (s *Server) stopLocked() error {
	if s.cmd == nil {
		return nil
	}
	select {
	case <-s.done:
		return nil
	default:
	}
	_ = s.cmd.Process.Kill() // fails only if the process already exited
	select {
	case <-s.done:
		return nil
	case <-time.After(exitTimeout):
		return fmt.Errorf("redistest: stop %s: pid %d still running %v after SIGKILL", s.Addr, s.cmd.Process.Pid, exitTimeout)
	}
}

// signal sends sig to the running server, reporting a failure to s.tb.
func (s *Server) signal(what string, sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.runningLocked() {
		s.tb.Errorf("redistest: %s %s: server is not running", what, s.Addr)
		return
	}
	if err := s.cmd.Process.Signal(sig); err != nil {
		s.tb.Errorf("redistest: %s %s: %v", what, s.Addr, err)
	}
}

// runningLocked reports whether a started process has not yet exited.
func (s *Server) runningLocked() bool {
	if s.cmd == nil {
		return false
	}
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// failure describes a failed start: err, then the tail of redis-server's
// output.
func (s *Server) failure(err error) string {
	return fmt.Sprintf("redistest: redis-server on %s (dir %s): %v\n--- last %d lines of %s ---\n%s",
		s.Addr, s.dir, err, logTailLines, s.logPath(), tail(s.logSince(0), logTailLines))
}

// logSince returns the server's output from byte offset off on, or a note
// saying why it cannot.
func (s *Server) logSince(off int64) string {
	b, err := os.ReadFile(s.logPath())
	if err != nil {
		return fmt.Sprintf("(cannot read log: %v)", err)
	}
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	return string(b[off:])
}

// tail returns the last n lines of text.
func tail(text string, n int) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// infoField returns the value of field in an INFO or CLUSTER INFO reply
// ("field:value" lines), or "" if it is absent.
func infoField(info, field string) string {
	for line := range strings.Lines(info) {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), field+":"); ok {
			return v
		}
	}
	return ""
}
