package gateway_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// newNarrowServer is httptest.NewServer with a small receive buffer on
// its connections, so that an upload it does not read stalls sluice's
// write to it within a few megabytes (sluice's own send buffer), long
// before a body timeout, however slowly a loaded machine copies bytes.
func newNarrowServer(t *testing.T, h http.Handler) *httptest.Server {
	t.Helper()
	lc := net.ListenConfig{Control: func(_, _ string, c syscall.RawConn) error {
		var err error
		if cerr := c.Control(func(fd uintptr) {
			err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10)
		}); cerr != nil {
			return cerr
		}
		return err
	}}
	ln, err := lc.Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	_ = srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	return srv
}

// TestCallerThatReadsNothingIsDropped: a caller that asks for a large
// answer and then reads none of it (a slow-read attack) loses its
// connection once nothing of the answer has moved for server.idle_timeout,
// and with it the upstream connection; it does not hold a connection
// (under the cap) and an upstream connection for ever.
func TestCallerThatReadsNothingIsDropped(t *testing.T) {
	stopped := make(chan error, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 64<<10))
		for {
			if _, err := w.Write(chunk); err != nil {
				stopped <- err
				return
			}
		}
	}))
	defer up.Close()
	h := startGateway(t, strings.Replace(serverConfig("  idle_timeout: 500ms\n"), "{{UPSTREAM}}", up.URL, 1))
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
	if _, err := c.Write([]byte("GET /claims/big HTTP/1.1\r\nHost: x\r\nX-API-Key: " + keyA + "\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-stopped: // sluice gave the answer up, and the upstream connection with it
	case <-time.After(15 * time.Second):
		t.Fatal("a caller reading nothing still held its connection and the upstream's after 15s")
	}
}

// TestPipelinerThatReadsNothingIsDropped: a caller that pipelines requests
// and reads none of the answers loses its connection once the answers
// have stopped moving for server.idle_timeout.
func TestPipelinerThatReadsNothingIsDropped(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(strings.Repeat("x", 64<<10)))
	}))
	defer up.Close()
	h := startGateway(t, strings.Replace(serverConfig("  idle_timeout: 500ms\n"), "{{UPSTREAM}}", up.URL, 1))
	c, err := net.Dial("tcp", strings.TrimPrefix(h.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.(*net.TCPConn).SetReadBuffer(4 << 10)
	reqs := []byte(strings.Repeat("GET /claims/1 HTTP/1.1\r\nHost: x\r\nX-API-Key: "+keyB+"\r\n\r\n", 100))
	_ = c.SetWriteDeadline(time.Now().Add(15 * time.Second))
	for {
		_, err := c.Write(reqs)
		if err == nil {
			continue
		}
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Fatal("the gateway still held the connection of a caller reading nothing after 15s")
		}
		return // reset: the gateway closed the connection
	}
}

// TestUpstreamNotTakingBodyGets504: an upstream that does not read a
// request body (its buffers full) for server.upstream_timeout gets the
// caller 504, counted as the upstream's failure. Before, nothing bounded
// the write of a body to the upstream: the request hung for ever.
func TestUpstreamNotTakingBodyGets504(t *testing.T) {
	release := make(chan struct{})
	up := newNarrowServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release // not reading the body yet
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer up.Close()
	defer close(release)
	h := startGateway(t, strings.Replace(serverConfig("  body_timeout: 1m\n  upstream_timeout: 300ms\n"), "{{UPSTREAM}}", up.URL, 1))
	postLargeBodyWants504(t, h)
	m := h.metrics()
	if got := metric(m, "sluice_caller_errors_total", "reason=body_timeout"); got != 0 {
		t.Errorf("sluice_caller_errors_total{reason=body_timeout} = %v, want 0", got)
	}
	if got := metric(m, "sluice_upstream_errors_total"); got != 1 {
		t.Errorf("sluice_upstream_errors_total = %v, want 1", got)
	}
}

// TestUpstreamSlowToTakeBodyIsNotCallersFault: a caller that sends its
// body at once is not told it was too slow (408) when the time went by
// waiting for the upstream to take the body: the body timeout counts
// against the caller only when the caller kept sluice waiting. The caller
// gets 504, counted as the upstream's failure.
//
// The body timeout must end while sluice waits for the upstream, its
// send buffer to it full: before that, sluice copies a few megabytes,
// and a deadline that strikes in the middle of the copy blames whichever
// side the copy was reading at the time (under the race detector on a
// loaded machine, the reads from the caller are half of it). So the
// timeout is long beside the copy (1s; the copy takes 20-80ms), and the
// upstream takes the body once it has passed.
func TestUpstreamSlowToTakeBodyIsNotCallersFault(t *testing.T) {
	const bodyTimeout = time.Second
	up := newNarrowServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(bodyTimeout + 300*time.Millisecond) // the slow upstream under test: not reading the body yet
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	defer up.Close()
	h := startGateway(t, strings.Replace(serverConfig("  body_timeout: "+bodyTimeout.String()+"\n  upstream_timeout: 10s\n"), "{{UPSTREAM}}", up.URL, 1))
	postLargeBodyWants504(t, h)
	if got := metric(h.metrics(), "sluice_caller_errors_total", "reason=body_timeout"); got != 0 {
		t.Errorf("sluice_caller_errors_total{reason=body_timeout} = %v, want 0", got)
	}
}

// postLargeBodyWants504 posts a body larger than the connections' buffers
// hold, written as fast as the gateway takes it, and checks the answer is
// 504. The writer ends when the test's cleanup closes the connection.
func postLargeBodyWants504(t *testing.T, h *harness) {
	t.Helper()
	c := h.dial()
	const size = 64 << 20 // more than the connections' buffers hold
	go func() {
		_, _ = io.WriteString(c.c, "POST /submit HTTP/1.1\r\nHost: x\r\nX-API-Key: "+keyA+"\r\nContent-Length: "+strconv.Itoa(size)+"\r\n\r\n")
		_, _ = c.c.Write(make([]byte, size))
	}()
	resp, body, err := c.read(10 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusGatewayTimeout {
		t.Errorf("status %d %q, want 504", resp.StatusCode, body)
	}
}
