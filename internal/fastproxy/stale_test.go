package fastproxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/fastproxy"
)

// TestStaleConnection (issue 15 item 10): the upstream closes a kept-alive
// connection after answering on it, and the next request goes on that
// connection. Closed with a FIN, the request meets io.EOF; with a FIN and
// then a reset (as a TCP keep-alive probe of an idle connection draws),
// its write fails with EPIPE. A request without a body whose method is
// safe is sent again on a new connection; any other is answered 502 and
// never sent twice.
func TestStaleConnection(t *testing.T) {
	for _, c := range []struct {
		name   string
		reset  bool // FIN then a reset; else FIN alone
		probe  string
		status int
		// again is what the upstream received after the first request:
		// the probe, sent again on a new connection; empty: nothing.
		again string
	}{
		{"FIN: GET sent again", false, req("GET /b"), 200, "GET /b"},
		{"FIN then reset: GET sent again", true, req("GET /b"), 200, "GET /b"},
		{"FIN then reset: HEAD sent again", true, req("HEAD /b"), 200, "HEAD /b"},
		{"FIN then reset: OPTIONS sent again", true, req("OPTIONS /b"), 200, "OPTIONS /b"},
		{"FIN then reset: POST not sent again", true, req("POST /b", "Content-Length: 0"), 502, ""},
		{"FIN then reset: DELETE not sent again", true, req("DELETE /b"), 502, ""},
		{"FIN then reset: GET with a body not sent again", true, req("GET /b", "Content-Length: 2") + "ab", 502, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := newClosingUpstream(t)
			s := startStand(t, mustURL(t, "http://"+up.ln.Addr().String()), standOptions{fwd: xff})
			if got := askOnce(t, s, req("GET /a")); got != 200 {
				t.Fatalf("first request: %d", got)
			}
			up.closeFirst(t, c.reset)
			if got := askOnce(t, s, c.probe); got != c.status {
				t.Errorf("status %d, want %d", got, c.status)
			}
			want := []string{"1 GET /a"}
			if c.again != "" {
				want = append(want, "2 "+c.again)
			}
			if got := up.received(); !slices.Equal(got, want) {
				t.Errorf("the upstream received %q, want %q", got, want)
			}
			wantOut := fastproxy.Answered
			if c.status == 502 {
				wantOut = fastproxy.UpstreamFailed
			}
			if got := s.outcomes(); len(got) != 2 || got[1] != wantOut {
				t.Errorf("outcomes %v, want the second %v", got, wantOut)
			}
		})
	}
}

// askOnce sends raw on a connection of its own and returns the status.
func askOnce(t *testing.T, s *stand, raw string) int {
	t.Helper()
	c := dial(t, s)
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), &http.Request{Method: strings.Fields(raw)[0]})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// closingUpstream answers every request 200 on a kept-alive connection
// and records it as "N METHOD target", N counting its connections; its
// first connection it closes on closeFirst.
type closingUpstream struct {
	ln    net.Listener
	first chan net.Conn
	wg    sync.WaitGroup
	mu    sync.Mutex
	got   []string
}

func newClosingUpstream(t *testing.T) *closingUpstream {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := &closingUpstream{ln: ln, first: make(chan net.Conn, 1)}
	u.wg.Add(1)
	go func() {
		defer u.wg.Done()
		for n := 1; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u.wg.Add(1)
			go func() { defer u.wg.Done(); u.serve(c, n) }()
		}
	}()
	t.Cleanup(func() { ln.Close(); u.wg.Wait() })
	return u
}

func (u *closingUpstream) serve(c net.Conn, n int) {
	br := bufio.NewReader(c)
	for {
		r, err := http.ReadRequest(br)
		if err != nil {
			_ = c.Close()
			return
		}
		_, _ = io.Copy(io.Discard, r.Body)
		u.mu.Lock()
		u.got = append(u.got, fmt.Sprintf("%d %s %s", n, r.Method, r.RequestURI))
		u.mu.Unlock()
		_, err = io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
		if err != nil || n == 1 {
			u.first <- c // closeFirst closes it
			return
		}
	}
}

// closeFirst closes the first connection from the upstream's side: a FIN
// (and, with reset, then a reset), and waits until the proxy's side of it
// has taken them in (CLOSE_WAIT after the FIN; gone after the reset).
func (u *closingUpstream) closeFirst(t *testing.T, reset bool) {
	t.Helper()
	var c *net.TCPConn
	select {
	case nc := <-u.first:
		c = nc.(*net.TCPConn)
	case <-time.After(10 * time.Second):
		t.Fatal("the upstream's first connection answered nothing")
	}
	proxySide, upSide := c.RemoteAddr().String(), c.LocalAddr().String()
	if err := c.CloseWrite(); err != nil {
		t.Fatal(err)
	}
	waitTCPState(t, proxySide, upSide, "08") // CLOSE_WAIT: the FIN arrived
	if !reset {
		_ = c.Close()
		return
	}
	_ = c.SetLinger(0)
	_ = c.Close()                          // a reset
	waitTCPState(t, proxySide, upSide, "") // the reset arrived: the socket is closed, unlisted
}

// waitTCPState waits until the loopback TCP socket from local to remote
// is in state (a /proc/net/tcp state, hex; "": not listed). Both ends
// name it: a port of an earlier connection (now in TIME_WAIT) may be
// reused for another remote.
func waitTCPState(t *testing.T, local, remote, state string) {
	t.Helper()
	key := [2]string{tcpKey(t, local), tcpKey(t, remote)}
	for end := time.Now().Add(10 * time.Second); ; {
		if tcpState(t, key) == state {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the socket %s -> %s never reached state %q (now %q)", local, remote, state, tcpState(t, key))
		}
		time.Sleep(time.Millisecond)
	}
}

// tcpKey is a loopback address in /proc/net/tcp's notation.
func tcpKey(t *testing.T, addr string) string {
	t.Helper()
	port, err := portOf(addr)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("0100007F:%04X", port)
}

// tcpState returns the state of the socket whose local and remote
// addresses are key in /proc/net/tcp's notation, or "" when none is
// listed.
func tcpState(t *testing.T, key [2]string) string {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatalf("reading sockets' states: %v", err)
	}
	for line := range strings.Lines(string(b)) {
		if f := strings.Fields(line); len(f) > 3 && f[1] == key[0] && f[2] == key[1] {
			return f[3]
		}
	}
	return ""
}

func portOf(s string) (uint16, error) {
	a, err := net.ResolveTCPAddr("tcp", s)
	if err != nil {
		return 0, err
	}
	return uint16(a.Port), nil
}

func (u *closingUpstream) received() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.got)
}
