package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFullCapLeavesAdminAndShutdown: with every caller connection slot
// taken (one slowloris connection under max_connections 1, another caller
// waiting in the backlog), /healthz still answers on the admin listener
// and the shutdown neither waits on the waiting caller nor hangs.
func TestFullCapLeavesAdminAndShutdown(t *testing.T) {
	up := newUpstream(t)
	ln, adm := listen(t), listen(t)
	stop, ran := runGatewayOn(t, ln, adm, strings.Replace(serverConfig("  max_connections: 1\n  drain_timeout: 200ms\n"), "{{UPSTREAM}}", up.srv.URL, 1))
	var conns []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = io.WriteString(c, "GET /claims/1 HTTP/1.1\r\nHost: x\r\n") // headers never finished
		conns = append(conns, c)
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get("http://" + adm.Addr().String() + "/healthz")
	if err != nil {
		t.Fatalf("/healthz with the connection cap full: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/healthz with the connection cap full: %d, want 200", resp.StatusCode)
	}
	stop()
	if err := runResult(t, ran); err != nil {
		t.Errorf("Run returned %v with no request in flight, want nil", err)
	}
	for i, c := range conns { // both closed: the held one by sluice, the waiting one by the kernel
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := bufio.NewReader(c).ReadByte(); err == nil {
			t.Errorf("connection %d got an answer to a request it never finished", i)
		}
	}
}
