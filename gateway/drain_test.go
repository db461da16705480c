package gateway_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// runWith serves a gateway for standardConfig with server settings in
// front of upstream; it returns the callers' and admin addresses, the
// function that starts the shutdown, and Run's result.
func runWith(t *testing.T, upstream, settings string) (addr, admin string, stop context.CancelFunc, ran chan error) {
	t.Helper()
	ln, adm := listen(t), listen(t)
	stop, ran = runGatewayOn(t, ln, adm, strings.Replace(serverConfig(settings), "{{UPSTREAM}}", upstream, 1))
	return "http://" + ln.Addr().String(), "http://" + adm.Addr().String(), stop, ran
}

func getStatus(t *testing.T, client *http.Client, url, key string) (int, http.Header, error) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("X-API-Key", key)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	if resp.Close {
		resp.Header.Set("Connection", "close") // the client takes it out of Header
	}
	return resp.StatusCode, resp.Header, err
}

// TestShutdownDelayKeepsServing: during server.shutdown_delay /readyz
// answers 503 while new connections are still served, each closed after
// its response; then Run returns nil.
func TestShutdownDelayKeepsServing(t *testing.T) {
	up := newUpstream(t)
	addr, admin, stop, ran := runWith(t, up.srv.URL, "  shutdown_delay: 3s\n")
	client := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	if code, _, err := getStatus(t, client, admin+"/readyz", ""); code != http.StatusOK {
		t.Fatalf("/readyz before shutdown: %d %v", code, err)
	}
	stop()
	eventually(t, "/readyz to answer 503", func() bool {
		code, _, _ := getStatus(t, client, admin+"/readyz", "")
		return code == http.StatusServiceUnavailable
	})
	client.CloseIdleConnections() // a new connection, made during the delay
	code, hdr, err := getStatus(t, client, addr+"/claims/1", keyA)
	if err != nil || code != http.StatusOK {
		t.Fatalf("a request during shutdown_delay: %d %v, want 200", code, err)
	}
	if hdr.Get("Connection") != "close" {
		t.Errorf("Connection %q during shutdown_delay, want close", hdr.Get("Connection"))
	}
	if err := runResult(t, ran); err != nil {
		t.Errorf("Run returned %v after a clean drain, want nil", err)
	}
}

// TestDrainTimeoutAnswers503: a request still waiting for the upstream
// when server.drain_timeout ends gets 503 problem+json, not a cut
// connection; Run reports the unclean drain.
func TestDrainTimeoutAnswers503(t *testing.T) {
	arrived := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	}))
	defer up.Close()
	addr, _, stop, ran := runWith(t, up.URL, "  drain_timeout: 200ms\n")
	client := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	defer client.CloseIdleConnections()
	type result struct {
		code int
		hdr  http.Header
		err  error
	}
	got := make(chan result, 1)
	go func() {
		code, hdr, err := getStatus(t, client, addr+"/claims/1", keyA)
		got <- result{code, hdr, err}
	}()
	<-arrived
	stop()
	r := <-got
	if r.err != nil || r.code != http.StatusServiceUnavailable || r.hdr.Get("Content-Type") != "application/problem+json" {
		t.Errorf("request outliving drain_timeout: %d %v, want 503 problem+json", r.code, r.err)
	}
	if err := runResult(t, ran); err == nil {
		t.Error("Run returned nil although a request outlived drain_timeout")
	}
}

// TestDrainIgnoresConnectionsWithoutRequest: a connection that never sent
// a request (a load balancer's or browser's preconnect, a port scan) does
// not make a clean drain unclean: net/http's Shutdown waits up to 5s for
// such a connection, longer than a short drain_timeout, but no request was
// in flight, so Run returns nil (and sluice exits 0).
func TestDrainIgnoresConnectionsWithoutRequest(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer up.Close()
	addr, _, stop, ran := runWith(t, up.URL, "  drain_timeout: 200ms\n")
	host := strings.TrimPrefix(addr, "http://")
	idle, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	// Connections are accepted in order: once a later one is answered,
	// the silent one has been accepted.
	client := &http.Client{Transport: &http.Transport{}, Timeout: 5 * time.Second}
	if code, _, err := getStatus(t, client, addr+"/claims/1", keyA); err != nil || code != http.StatusOK {
		t.Fatalf("GET: %d %v", code, err)
	}
	client.CloseIdleConnections()
	stop()
	if err := runResult(t, ran); err != nil {
		t.Errorf("Run returned %v with no request in flight, want nil", err)
	}
}

// TestDrainAnswersQueuedRequest503: a request waiting in protect's queue
// when server.drain_timeout ends gets 503 problem+json like the request
// at the upstream, not an empty 200: the drain's cut is no caller leaving.
func TestDrainAnswersQueuedRequest503(t *testing.T) {
	arrived := make(chan struct{}, 1)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done()
	}))
	defer up.Close()
	ln, adm := listen(t), listen(t)
	stop, _ := runGatewayOn(t, ln, adm, protectConfig(up.URL,
		"protect: {max_in_flight: 1, queue: {max_wait: 1m, max_length: 10}}\nserver:\n  drain_timeout: 200ms\n"))
	atUpstream := sendRaw(t, ln, "GET /claims/1 HTTP/1.1\r\nHost: x\r\nX-API-Key: "+keyA+"\r\n\r\n")
	<-arrived
	queued := sendRaw(t, ln, "GET /claims/2 HTTP/1.1\r\nHost: x\r\nX-API-Key: "+keyA+"\r\n\r\n")
	waitQueued(t, adm)
	stop()
	atUpstream.mustRead(http.StatusServiceUnavailable)
	queued.mustRead(http.StatusServiceUnavailable)
}

// TestQueuedBodyKeepsItsTimeout: a request with a body that waits in
// protect's queue longer than server.body_timeout has its body read once
// it is admitted, and reaches the upstream: the body timeout counts from
// the end of the queue's max_wait as from the end of a rule's delay.
// Before, the read deadline had passed while it queued, and the request
// was answered 504 with the upstream counted as too slow to take a body
// (which shrinks the adaptive limit).
func TestQueuedBodyKeepsItsTimeout(t *testing.T) {
	arrived, release := make(chan string, 2), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		arrived <- string(b)
		if r.Method == http.MethodGet {
			<-release
		}
	}))
	defer up.Close()
	ln, adm := listen(t), listen(t)
	runGatewayOn(t, ln, adm, protectConfig(up.URL,
		"protect: {max_in_flight: 1, queue: {max_wait: 1m, max_length: 10}}\nserver:\n  body_timeout: 200ms\n"))
	first := sendRaw(t, ln, "GET /claims/1 HTTP/1.1\r\nHost: x\r\nX-API-Key: "+keyA+"\r\n\r\n")
	<-arrived
	body := strings.Repeat("b", 64<<10) // more than the server reads with the headers: the rest is read from the connection
	queued := sendRaw(t, ln, "POST /claims/2 HTTP/1.1\r\nHost: x\r\nX-API-Key: "+keyA+"\r\nContent-Length: 65536\r\n\r\n"+body)
	waitQueued(t, adm)
	time.Sleep(300 * time.Millisecond) // the body timeout passes while it queues: the behaviour under test
	close(release)
	first.mustRead(http.StatusOK)
	queued.mustRead(http.StatusOK)
	if got := <-arrived; got != body {
		t.Errorf("the upstream read %d bytes, want the 65536 sent", len(got))
	}
}

// sendRaw connects to ln and writes req by hand; the connection is closed
// when the test ends.
func sendRaw(t *testing.T, ln net.Listener, req string) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r := &rawConn{t: t, c: c, br: bufio.NewReader(c)}
	r.write(req)
	return r
}

// waitQueued waits until the metrics on adm show one request in protect's
// queue.
func waitQueued(t *testing.T, adm net.Listener) {
	t.Helper()
	eventually(t, "the second request queued", func() bool {
		resp, err := http.Get("http://" + adm.Addr().String() + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return metric(string(b), "sluice_queue_length") == 1
	})
}
