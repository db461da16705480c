package fastproxy

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/internal/testcert"
)

// TestParkedTLSClosedAgain parks a TLS connection (its wait for the next
// request given up) and closes it from two goroutines at once, as the
// server and a drain do: the first hands it to the parker, the others
// touch nothing (the socket under it is the parker's; before, a second
// Close sent close_notify through the socket taken away and panicked).
// Woken by its next request, it is served; closing the old wrapper again
// then must not close the connection it woke as. Its parking and its end
// count towards the next reclaim of memory, once each.
func TestParkedTLSClosedAgain(t *testing.T) {
	srv := &fasthttp.Server{Handler: func(ctx *fasthttp.RequestCtx) { ctx.SetBodyString("ok") }}
	k := NewParking(srv, 10*time.Millisecond, 10*time.Millisecond, time.Minute, time.Second)
	if k == nil {
		t.Skip("no parking here (not Linux)")
	}
	defer k.WaitWoken()
	defer k.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	pair := testcert.New(t, testcert.Options{})
	conf := &tls.Config{Certificates: []tls.Certificate{pair.TLS(t)}}
	accepted := make(chan *tls.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			accepted <- nil
			return
		}
		tc := TLSServer(c, conf)
		if tc.Handshake() != nil {
			tc.Close()
			tc = nil
		}
		accepted <- tc
	}()
	client, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pair.Pool()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	tc := <-accepted
	if tc == nil {
		t.Fatal("the server's handshake failed")
	}
	sc := k.tlsConn(tc, nil)
	sc.idleWait(true)
	_ = sc.SetReadDeadline(time.Now().Add(time.Minute)) // cut to the parker's first
	if _, err := sc.Read(make([]byte, 1)); err != errParked {
		t.Fatalf("read on an idle connection: %v, want errParked once its wait was given up", err)
	}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if err := sc.Close(); err != nil {
				t.Errorf("Close of a connection being parked: %v", err)
			}
		})
	}
	wg.Wait()
	if got := k.Parked(); got != 1 {
		t.Fatalf("Parked() = %d after the closes, want 1", got)
	}
	if _, err := io.WriteString(client, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); k.Parked() != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not woken by its next request")
		}
	}
	if err := sc.Close(); err != nil { // the wrapper it was parked from
		t.Errorf("Close of the parked wrapper after the wake: %v", err)
	}
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(client), nil)
	if err != nil {
		t.Fatalf("the woken connection's answer: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(body) != "ok" {
		t.Errorf("answer %d %q, want 200 ok", resp.StatusCode, body)
	}
	// The woken connection closing counts towards giving memory back, as
	// its parking did: twice in all, the old wrapper's closes never.
	client.Close()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		k.mu.Lock()
		n := k.sinceGC
		k.mu.Unlock()
		if n == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d counted towards the next reclaim, want 2 (parked, then closed once woken)", n)
		}
	}
}
