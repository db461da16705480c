package gateway_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/gateway"
)

const parkConfig = `listen: 127.0.0.1:18080
upstream: {{UPSTREAM}}
server: {idle_timeout: 30s}
rules:
  - name: all
    rate: 300/m
`

// keepAlive is a caller's keep-alive connection that sends requests one
// at a time and reads each answer.
type keepAlive struct {
	c  net.Conn
	br *bufio.Reader
}

func dialKeepAlive(t *testing.T, addr string) *keepAlive {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(addr, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &keepAlive{c: c, br: bufio.NewReader(c)}
}

// send writes raw and reads as many answers as it holds requests.
func (k *keepAlive) send(t *testing.T, raw string, answers int) []int {
	t.Helper()
	_ = k.c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(k.c, raw); err != nil {
		t.Fatalf("write: %v", err)
	}
	var statuses []int
	for range answers {
		resp, err := http.ReadResponse(k.br, nil)
		if err != nil {
			t.Fatalf("read answer %d: %v", len(statuses), err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		statuses = append(statuses, resp.StatusCode)
	}
	return statuses
}

const getOne = "GET /claims/1 HTTP/1.1\r\nHost: x\r\n\r\n"

// TestIdleConnectionsParked: keep-alive connections idle for parkAfter
// are parked (no goroutine each), serve their next requests as before
// (pipelined ones too), and count against the rules exactly.
func TestIdleConnectionsParked(t *testing.T) {
	defer gateway.SetParkAfter(50 * time.Millisecond)()
	h := startGateway(t, parkConfig)
	before := runtime.NumGoroutine()
	const n = 100
	conns := make([]*keepAlive, n)
	for i := range conns {
		conns[i] = dialKeepAlive(t, h.url)
		if got := conns[i].send(t, getOne, 1); got[0] != http.StatusOK {
			t.Fatalf("first request on connection %d: %v", i, got)
		}
	}
	eventually(t, fmt.Sprintf("%d connections parked", n), func() bool { return metric(h.metrics(), "sluice_parked_connections") == n })
	eventually(t, "their goroutines gone", func() bool { return runtime.NumGoroutine() < before+n/4 })
	for i, k := range conns { // woken: each answers again, two pipelined requests at once
		if got := k.send(t, getOne+getOne, 2); got[0] != http.StatusOK || got[1] != http.StatusOK {
			t.Fatalf("connection %d after parking: %v, want 200 200", i, got)
		}
	}
	if got := h.up.count(); got != 3*n {
		t.Errorf("the upstream saw %d requests, want %d", got, 3*n)
	}
	eventually(t, "parked again", func() bool { return metric(h.metrics(), "sluice_parked_connections") == n })
	// The rule counts every request, parked or not: 300 per minute, all sent.
	k := conns[0]
	limited := 0
	for range 10 {
		if got := k.send(t, getOne, 1); got[0] == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited != 10 {
		t.Errorf("%d of 10 requests past the limit answered 429, want 10", limited)
	}
}

// parkedOne serves parkConfig with server settings server, and returns
// it with one keep-alive connection that has had one answer and is parked.
func parkedOne(t *testing.T, server string) (*harness, *keepAlive) {
	t.Helper()
	h := startGateway(t, strings.Replace(parkConfig, "idle_timeout: 30s", server, 1))
	k := dialKeepAlive(t, h.url)
	k.send(t, getOne, 1)
	eventually(t, "parked", func() bool { return metric(h.metrics(), "sluice_parked_connections") == 1 })
	return h, k
}

// TestParkedConnectionIdleTimeout: a parked connection is closed once the
// whole idle timeout has passed since its last answer, as one in its
// goroutine: parked soon after its first answer (parkFirst, shorter than
// parkAfter; it was closed parkAfter less parkFirst early) or after a
// later one.
func TestParkedConnectionIdleTimeout(t *testing.T) {
	defer gateway.SetParkWaits(10*time.Millisecond, 300*time.Millisecond)()
	for _, requests := range []int{1, 2} {
		t.Run(fmt.Sprintf("after answer %d", requests), func(t *testing.T) {
			h := startGateway(t, strings.Replace(parkConfig, "idle_timeout: 30s", "idle_timeout: 600ms", 1))
			k := dialKeepAlive(t, h.url)
			var last time.Time // before the last answer: the server's idle timeout runs from a moment after
			for range requests {
				last = time.Now()
				k.send(t, getOne, 1)
				eventually(t, "parked", func() bool { return metric(h.metrics(), "sluice_parked_connections") == 1 })
			}
			_ = k.c.SetReadDeadline(time.Now().Add(5 * time.Second))
			if _, err := k.br.ReadByte(); err != io.EOF {
				t.Fatalf("read %v, want EOF once the idle timeout passed", err)
			}
			if d := time.Since(last); d < 600*time.Millisecond {
				t.Errorf("closed %v after its last answer, before the idle timeout (600ms)", d)
			}
			if got := metric(h.metrics(), "sluice_parked_connections"); got != 0 {
				t.Errorf("sluice_parked_connections = %v, want 0", got)
			}
		})
	}
}

// TestParkedConnectionSlowHeader: a request whose header comes slowly after
// the connection was parked is still bound by the header timeout.
func TestParkedConnectionSlowHeader(t *testing.T) {
	defer gateway.SetParkAfter(50 * time.Millisecond)()
	_, k := parkedOne(t, "idle_timeout: 30s, read_header_timeout: 300ms")
	if _, err := io.WriteString(k.c, "GET /claims/1 HTTP/1.1\r\n"); err != nil { // and no more
		t.Fatal(err)
	}
	_ = k.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(k.br, nil)
	if err != nil {
		t.Fatalf("no answer to a header that never ended: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("status %d, want 408", resp.StatusCode)
	}
}

// TestParkedConnectionsShutdown: stopping the gateway closes parked
// connections (and the goroutine check of TestMain finds nothing left).
func TestParkedConnectionsShutdown(t *testing.T) {
	defer gateway.SetParkAfter(50 * time.Millisecond)()
	h := startGateway(t, parkConfig)
	var conns []*keepAlive
	for range 5 {
		k := dialKeepAlive(t, h.url)
		k.send(t, getOne, 1)
		conns = append(conns, k)
	}
	eventually(t, "parked", func() bool { return metric(h.metrics(), "sluice_parked_connections") == 5 })
	h.stop()
	for i, k := range conns {
		_ = k.c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := k.br.ReadByte(); err != io.EOF {
			t.Errorf("connection %d: read %v after the gateway stopped, want EOF", i, err)
		}
	}
}

// TestParkedConnectionHoldsItsSlot: a parked connection (its socket alone)
// keeps its place under max_connections, woken or not, and gives it back
// once it closes.
func TestParkedConnectionHoldsItsSlot(t *testing.T) {
	defer gateway.SetParkAfter(50 * time.Millisecond)()
	h, k := parkedOne(t, "idle_timeout: 30s, max_connections: 1")
	other := dialKeepAlive(t, h.url) // waits in the listen backlog
	if _, err := io.WriteString(other.c, getOne); err != nil {
		t.Fatal(err)
	}
	_ = other.c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if _, err := other.br.ReadByte(); err == nil {
		t.Fatal("a second connection was served under max_connections 1 while the first was parked")
	}
	if got := k.send(t, getOne, 1); got[0] != http.StatusOK { // woken, in its slot still
		t.Fatalf("the parked connection woken: %v", got)
	}
	eventually(t, "parked again", func() bool { return metric(h.metrics(), "sluice_parked_connections") == 1 })
	k.c.Close()
	_ = other.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(other.br, nil)
	if err != nil {
		t.Fatalf("the waiting connection not served once the parked one closed: %v", err)
	}
	resp.Body.Close()
}

// TestFirstWaitParksSooner: a connection is parked soon after its first
// answer (parkFirst), a woken one only after parkAfter.
func TestFirstWaitParksSooner(t *testing.T) {
	// parkAfter long enough that the scrapes below, on a loaded machine,
	// never make a first wait look as long as a later one.
	defer gateway.SetParkWaits(10*time.Millisecond, 2*time.Second)()
	h := startGateway(t, parkConfig)
	k := dialKeepAlive(t, h.url)
	k.send(t, getOne, 1)
	start := time.Now()
	eventually(t, "parked after its first answer", func() bool { return metric(h.metrics(), "sluice_parked_connections") == 1 })
	if d := time.Since(start); d >= 2*time.Second {
		t.Errorf("parked %v after its first answer, want well within parkAfter (2s)", d)
	}
	k.send(t, getOne, 1)
	woke := time.Now()
	time.Sleep(300 * time.Millisecond)
	if got := metric(h.metrics(), "sluice_parked_connections"); got != 0 && time.Since(woke) < 2*time.Second {
		t.Fatalf("woken connection parked again within 300ms of its answer, want after parkAfter (2s)")
	}
	eventually(t, "parked after parkAfter", func() bool { return metric(h.metrics(), "sluice_parked_connections") == 1 })
}
