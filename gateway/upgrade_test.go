package gateway_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// echoUpstream is a WebSocket-like service: a request with Upgrade:
// websocket is answered 101 by hand on the hijacked connection, which
// then echoes every byte until the other side closes; /refuse answers
// such a request 403 instead, and /other switches to another protocol
// than the one asked for, and /push sends "tick" every 100ms for 3s
// then closes. Any other request is answered 200 "plain".
// It sends what each request carried on seen, and on closed when an
// echoing connection has ended.
type echoUpstream struct {
	srv    *httptest.Server
	seen   chan http.Header
	closed chan struct{}
}

func newEchoUpstream(t *testing.T) *echoUpstream {
	t.Helper()
	u := &echoUpstream{seen: make(chan http.Header, 16), closed: make(chan struct{}, 16)}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *echoUpstream) serve(w http.ResponseWriter, r *http.Request) {
	u.seen <- r.Header.Clone()
	switch {
	case !strings.EqualFold(r.Header.Get("Upgrade"), "websocket"):
		_, _ = io.WriteString(w, "plain")
		return
	case r.URL.Path == "/claims/refuse":
		w.WriteHeader(http.StatusForbidden)
		_, _ = io.WriteString(w, "no upgrade here")
		return
	}
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer func() { u.closed <- struct{}{} }()
	defer c.Close()
	proto := "websocket"
	if r.URL.Path == "/claims/other" {
		proto = "other" // not what was asked for
	}
	_, _ = io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: "+proto+"\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\nhello")
	if r.URL.Path == "/claims/push" { // a service that only pushes: the caller sends nothing
		for range 30 {
			if _, err := io.WriteString(c, "tick"); err != nil {
				return
			}
			time.Sleep(100 * time.Millisecond) // the pace of the pushes is the scenario
		}
		return
	}
	_, _ = io.Copy(c, brw)
}

// upgradeRequest is a WebSocket opening handshake for path, by partner-a.
func upgradeRequest(path, upgrade string) string {
	return "GET " + path + " HTTP/1.1\r\nHost: x\r\nX-API-Key: " + keyA + "\r\nConnection: keep-alive, Upgrade\r\n" +
		"Upgrade: " + upgrade + "\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
}

// upgraded opens a tunnel through the gateway on ln: the 101 read, the
// upstream's first bytes ("hello") read.
func upgraded(t *testing.T, ln string) (*rawConn, *http.Response) {
	t.Helper()
	c, err := net.Dial("tcp", ln)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := &rawConn{t: t, c: c, br: bufio.NewReader(c)}
	r.write(upgradeRequest("/claims/1", "websocket"))
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(r.br, nil)
	if err != nil {
		t.Fatalf("reading the 101: %v", err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("status %d %q, want 101", resp.StatusCode, b)
	}
	r.expect("hello")
	return r, resp
}

// expect reads len(want) bytes within 5s and checks them.
func (r *rawConn) expect(want string) {
	r.t.Helper()
	_ = r.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(r.br, got); err != nil || string(got) != want {
		r.t.Fatalf("read %q, %v; want %q", got, err, want)
	}
}

// TestUpgradeEchoes: a WebSocket upgrade through Run is decided like any
// request (RateLimit fields on the 101), goes on with the forwarding
// headers and Connection: Upgrade, and the tunnel carries bytes both ways;
// its answer is counted as a 101 once the caller closes it.
func TestUpgradeEchoes(t *testing.T) {
	up := newEchoUpstream(t)
	ln, adm := listen(t), listen(t)
	runGatewayOn(t, ln, adm, strings.Replace(standardConfig, "{{UPSTREAM}}", up.srv.URL, 1))
	r, resp := upgraded(t, ln.Addr().String())
	if resp.Header.Get("Upgrade") != "websocket" || resp.Header.Get("Sec-Websocket-Accept") == "" ||
		resp.Header.Get("RateLimit-Policy") != `"claims";q=100;w=60` {
		t.Errorf("101's fields: %v", resp.Header)
	}
	if ct, ok := resp.Header["Content-Type"]; ok { // issue 15 item 7: the upstream's 101 has none
		t.Errorf("the 101 has Content-Type %q, which the upstream's had not", ct)
	}
	for _, msg := range []string{"ping", strings.Repeat("x", 100<<10)} {
		r.write(msg)
		r.expect(msg)
	}
	got := <-up.seen
	for name, want := range map[string]string{"Connection": "Upgrade", "Upgrade": "websocket", "X-Forwarded-For": "127.0.0.1",
		"X-Sluice-Client": "partner-a", "Sec-Websocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-Websocket-Version": "13"} {
		if got.Get(name) != want {
			t.Errorf("the upstream got %s %q, want %q", name, got.Get(name), want)
		}
	}
	r.c.Close()
	receiveN(t, up.closed, 1, 5*time.Second, "the upstream's side to close")
	eventually(t, "the 101 counted once the tunnel ended", func() bool {
		return metric(getMetrics(t, adm), "sluice_upstream_responses_total", "code=101") == 1
	})
}

// TestUpgradeLimitedFirst: an upgrade over the limit is answered 429 and
// never reaches the upstream.
func TestUpgradeLimitedFirst(t *testing.T) {
	up := newEchoUpstream(t)
	ln, adm := listen(t), listen(t)
	cfg := strings.Replace(standardConfig, "algorithm: fixed_window\n    rate: 100/m\n  - name: submit",
		"algorithm: sliding_log\n    rate: 1/m\n  - name: submit", 1) // no window boundary between the two
	runGatewayOn(t, ln, adm, strings.Replace(cfg, "{{UPSTREAM}}", up.srv.URL, 1))
	first, _ := upgraded(t, ln.Addr().String())
	<-up.seen
	second := sendRaw(t, ln, upgradeRequest("/claims/1", "websocket"))
	second.mustRead(http.StatusTooManyRequests)
	first.write("still open")
	first.expect("still open")
	if n := len(up.seen); n != 0 {
		t.Errorf("the upstream saw %d more requests, want none after the 429", n)
	}
}

// TestUpgradeHoldsConcurrencySlot: a tunnel holds its concurrency slot
// for its whole life and gives it back when it ends: the request's after
// steps run when the upgraded connection closes.
func TestUpgradeHoldsConcurrencySlot(t *testing.T) {
	up := newEchoUpstream(t)
	ln, adm := listen(t), listen(t)
	cfg := strings.Replace(standardConfig, "algorithm: fixed_window\n    rate: 100/m\n  - name: submit",
		"concurrency: 1\n  - name: submit", 1)
	cfg = strings.Replace(cfg, "large: { claims: 1000/m }", "large: { claims: 5 }", 1)
	runGatewayOn(t, ln, adm, strings.Replace(cfg, "{{UPSTREAM}}", up.srv.URL, 1))
	first, _ := upgraded(t, ln.Addr().String())
	sendRaw(t, ln, upgradeRequest("/claims/1", "websocket")).mustRead(http.StatusTooManyRequests)
	first.c.Close()
	eventually(t, "the slot given back once the tunnel ended", func() bool {
		resp, _, err := sendRaw(t, ln, upgradeRequest("/claims/1", "websocket")).read(5 * time.Second)
		return err == nil && resp.StatusCode == http.StatusSwitchingProtocols
	})
}

// TestUpgradeCountsTowardMaxConnections: a tunnel holds its caller's
// connection slot: under max_connections 1 the next caller is served
// only once the tunnel has closed.
func TestUpgradeCountsTowardMaxConnections(t *testing.T) {
	up := newEchoUpstream(t)
	ln, adm := listen(t), listen(t)
	runGatewayOn(t, ln, adm, strings.Replace(serverConfig("  max_connections: 1\n"), "{{UPSTREAM}}", up.srv.URL, 1))
	tunnel, _ := upgraded(t, ln.Addr().String())
	next := sendRaw(t, ln, "GET /claims/1 HTTP/1.1\r\nHost: x\r\nX-API-Key: "+keyA+"\r\n\r\n")
	if resp, _, err := next.read(300 * time.Millisecond); err == nil {
		t.Fatalf("a second caller was answered %d while the tunnel held the one connection slot", resp.StatusCode)
	}
	tunnel.c.Close()
	next.mustRead(http.StatusOK)
}

// TestUpgradeRefusedByUpstream: an upstream that answers the upgrade 403
// has its answer passed on as a plain request's, body and all, and the
// connection serves the next request.
func TestUpgradeRefusedByUpstream(t *testing.T) {
	up := newEchoUpstream(t)
	ln, adm := listen(t), listen(t)
	runGatewayOn(t, ln, adm, strings.Replace(standardConfig, "{{UPSTREAM}}", up.srv.URL, 1))
	r := sendRaw(t, ln, upgradeRequest("/claims/refuse", "websocket"))
	resp, body, err := r.read(5 * time.Second)
	if err != nil || resp.StatusCode != http.StatusForbidden || body != "no upgrade here" {
		t.Fatalf("refused upgrade: %v %q %v, want 403 %q", resp, body, err, "no upgrade here")
	}
	r.write("GET /claims/1 HTTP/1.1\r\nHost: x\r\nX-API-Key: " + keyA + "\r\n\r\n")
	if resp, body, err := r.read(5 * time.Second); err != nil || resp.StatusCode != http.StatusOK || body != "plain" {
		t.Errorf("the next request on the connection: %v %q %v, want 200 plain", resp, body, err)
	}
}

// TestUpgradeToAnotherProtocol: a 101 to a protocol the caller did not
// ask for is answered 502, as net/http's ReverseProxy did.
func TestUpgradeToAnotherProtocol(t *testing.T) {
	up := newEchoUpstream(t)
	ln, adm := listen(t), listen(t)
	runGatewayOn(t, ln, adm, strings.Replace(standardConfig, "{{UPSTREAM}}", up.srv.URL, 1))
	sendRaw(t, ln, upgradeRequest("/claims/other", "websocket")).mustRead(http.StatusBadGateway)
	receiveN(t, up.closed, 1, 5*time.Second, "the upstream's connection to close")
}

// TestUpgradeH2CNotSentOn: Upgrade: h2c goes on as a plain request,
// without Upgrade, as the attack suite pins for the default upstream.
func TestUpgradeH2CNotSentOn(t *testing.T) {
	up := newEchoUpstream(t)
	ln, adm := listen(t), listen(t)
	runGatewayOn(t, ln, adm, strings.Replace(standardConfig, "{{UPSTREAM}}", up.srv.URL, 1))
	for _, proto := range []string{"h2c", "websocket, h2c"} {
		r := sendRaw(t, ln, upgradeRequest("/claims/1", proto))
		resp, body, err := r.read(5 * time.Second)
		if err != nil || resp.StatusCode != http.StatusOK || body != "plain" {
			t.Errorf("Upgrade: %s: %v %q %v, want 200 plain", proto, resp, body, err)
		}
		if got := <-up.seen; got.Get("Upgrade") != "" {
			t.Errorf("Upgrade: %s went on as Upgrade %q", proto, got.Get("Upgrade"))
		}
	}
}

// TestUpgradeClosedByDrain: an open tunnel is given the drain timeout,
// then closed on both sides; Run returns nil (a tunnel is no request in
// flight).
func TestUpgradeClosedByDrain(t *testing.T) {
	up := newEchoUpstream(t)
	ln, adm := listen(t), listen(t)
	stop, ran := runGatewayOn(t, ln, adm, strings.Replace(serverConfig("  drain_timeout: 200ms\n"), "{{UPSTREAM}}", up.srv.URL, 1))
	r, _ := upgraded(t, ln.Addr().String())
	stop()
	if !r.closedAfter() {
		t.Error("the caller's side of the tunnel stayed open after the drain")
	}
	receiveN(t, up.closed, 1, 5*time.Second, "the upstream's side to close")
	if err := runResult(t, ran); err != nil {
		t.Errorf("Run returned %v, want nil", err)
	}
}

// TestUpgradeIdleTimeout: a tunnel on which nothing moves either way for
// idle_timeout is closed.
func TestUpgradeIdleTimeout(t *testing.T) {
	up := newEchoUpstream(t)
	ln, adm := listen(t), listen(t)
	runGatewayOn(t, ln, adm, strings.Replace(serverConfig("  idle_timeout: 300ms\n"), "{{UPSTREAM}}", up.srv.URL, 1))
	r, _ := upgraded(t, ln.Addr().String())
	if !r.closedAfter() {
		t.Error("an idle tunnel stayed open past idle_timeout")
	}
	receiveN(t, up.closed, 1, 5*time.Second, "the upstream's side to close")
}

// TestUpgradeIdleIsBothWays: a tunnel on which only the upstream sends,
// for longer than idle_timeout, stays open: idle means nothing moves
// either way.
func TestUpgradeIdleIsBothWays(t *testing.T) {
	up := newEchoUpstream(t)
	ln, adm := listen(t), listen(t)
	runGatewayOn(t, ln, adm, strings.Replace(serverConfig("  idle_timeout: 1s\n"), "{{UPSTREAM}}", up.srv.URL, 1))
	r := sendRaw(t, ln, upgradeRequest("/claims/push", "websocket"))
	if resp := r.mustRead(http.StatusSwitchingProtocols); resp.Header.Get("Upgrade") != "websocket" {
		t.Fatalf("101 with Upgrade %q", resp.Header.Get("Upgrade"))
	}
	r.expect("hello")
	for range 30 { // 3s of pushes, all through
		r.expect("tick")
	}
	if !r.closedAfter() {
		t.Error("the tunnel stayed open after the upstream closed")
	}
}

func getMetrics(t *testing.T, adm net.Listener) string {
	t.Helper()
	resp, err := http.Get("http://" + adm.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return string(b)
}
