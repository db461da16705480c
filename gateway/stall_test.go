package gateway_test

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

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
