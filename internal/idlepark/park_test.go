//go:build linux

package idlepark

import (
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// pair returns both ends of a loopback TCP connection: the server's as a
// Conn, the client's.
func pair(t *testing.T, ln net.Listener) (Conn, net.Conn) {
	t.Helper()
	cli, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close(); srv.Close() })
	return srv.(*net.TCPConn), cli
}

func listen(t *testing.T) net.Listener {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// TestWakeOnBytes: a parked connection comes back once bytes arrive, with
// the bytes still to be read, and not before.
func TestWakeOnBytes(t *testing.T) {
	ln := listen(t)
	woken := make(chan net.Conn, 16)
	p, err := New(Options{Wake: func(c net.Conn, _ func(), _ any) { woken <- c }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	const n = 10
	var clients []net.Conn
	for range n {
		s, c := pair(t, ln)
		if err := p.Park(s, 0, nil, nil); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	if got := p.Parked(); got != n {
		t.Fatalf("Parked() = %d, want %d", got, n)
	}
	select {
	case c := <-woken:
		t.Fatalf("%v woken with nothing sent", c.RemoteAddr())
	case <-time.After(50 * time.Millisecond):
	}
	for i, c := range clients {
		if _, err := c.Write([]byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
		select {
		case s := <-woken:
			if s.RemoteAddr().String() != c.LocalAddr().String() {
				t.Errorf("woke %v, want %v", s.RemoteAddr(), c.LocalAddr())
			}
			b := make([]byte, 1)
			_ = s.SetReadDeadline(time.Now().Add(time.Second))
			if _, err := io.ReadFull(s, b); err != nil || b[0] != byte('a'+i) {
				t.Errorf("read %q %v after waking, want %q", b, err, byte('a'+i))
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("connection %d not woken after a byte arrived", i)
		}
	}
	if got := p.Parked(); got != 0 {
		t.Errorf("Parked() = %d after all woke, want 0", got)
	}
}

// TestEndClosesOrWakes: a connection its client closes having sent
// nothing is closed without a wake (closed called); one whose client sent
// a request before closing is handed back, the request then the end to
// read.
func TestEndClosesOrWakes(t *testing.T) {
	ln := listen(t)
	woken := make(chan net.Conn, 1)
	p, err := New(Options{Wake: func(c net.Conn, _ func(), _ any) { woken <- c }})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, c := pair(t, ln)
	ended := make(chan struct{})
	if err := p.Park(s, 0, func() { close(ended) }, nil); err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case <-ended:
	case w := <-woken:
		w.Close()
		t.Fatal("woken by its end alone")
	case <-time.After(5 * time.Second):
		t.Fatal("not closed after the client's close")
	}
	if got := p.Parked(); got != 0 {
		t.Errorf("Parked() = %d, want 0", got)
	}

	s, c = pair(t, ln)
	if err := p.Park(s, 0, func() { t.Error("closed called for a woken connection") }, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	c.Close()
	select {
	case w := <-woken:
		defer w.Close()
		_ = w.SetReadDeadline(time.Now().Add(time.Second))
		b, err := io.ReadAll(w)
		if string(b) != "x" || err != nil {
			t.Errorf("read %q %v, want x and its end", b, err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("not woken by bytes before the client's close")
	}
}

// TestIdleExpiry: a connection parked for its idle time without a byte is
// closed, the one parked later with a shorter idle time first.
func TestIdleExpiry(t *testing.T) {
	ln := listen(t)
	p, err := New(Options{Wake: func(c net.Conn, _ func(), _ any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, c := pair(t, ln)
	long, lc := pair(t, ln)
	start := time.Now()
	if err := p.Park(long, time.Second, nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := p.Park(s, 100*time.Millisecond, nil, nil); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("client read %v, want EOF once the parked connection expired", err)
	}
	if d := time.Since(start); d < 100*time.Millisecond {
		t.Errorf("closed after %v, before its idle time (100ms)", d)
	}
	// Parked before it with a longer idle time, the other is not closed
	// with it, nor does it hold it back.
	if d, got := time.Since(start), p.Parked(); d < time.Second && got != 1 {
		t.Errorf("Parked() = %d %v after the 1s connection was parked, want it still parked", got, d)
	}
	_ = lc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := lc.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("client read %v, want EOF once the 1s connection expired", err)
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("closed after %v, before its idle time (1s)", d)
	}
	if got := p.Parked(); got != 0 {
		t.Errorf("Parked() = %d, want 0", got)
	}
}

// TestCloseClosesParked: Close closes what is parked and refuses more.
func TestCloseClosesParked(t *testing.T) {
	ln := listen(t)
	p, err := New(Options{Wake: func(c net.Conn, _ func(), _ any) {}})
	if err != nil {
		t.Fatal(err)
	}
	var clients []net.Conn
	for range 3 {
		s, c := pair(t, ln)
		if err := p.Park(s, 0, nil, nil); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range clients {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("client read %v, want EOF after Close", err)
		}
	}
	s, _ := pair(t, ln)
	if err := p.Park(s, 0, nil, nil); err != ErrClosed {
		t.Errorf("Park after Close: %v, want ErrClosed", err)
	}
	_ = p.Close() // twice is fine
}

// TestNoGoroutinePerConnection: parking a thousand connections starts no
// goroutine.
func TestNoGoroutinePerConnection(t *testing.T) {
	ln := listen(t)
	p, err := New(Options{Wake: func(c net.Conn, _ func(), _ any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	before := runtime.NumGoroutine()
	for range 1000 {
		s, _ := pair(t, ln)
		if err := p.Park(s, 0, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	if after := runtime.NumGoroutine(); after > before+2 {
		t.Errorf("%d goroutines after parking 1000 connections, %d before", after, before)
	}
}

// TestParkKeepsTheSocketAlone: Park closes the net.Conn it is given but not
// its socket (the client's bytes reach the new net.Conn Wake gets), and
// calls closed once it closes the socket itself, never on a wake; Wake
// gets the state Park was given.
func TestParkKeepsTheSocketAlone(t *testing.T) {
	ln := listen(t)
	woken := make(chan net.Conn, 1)
	var wokenClosed func()
	var wokenState any
	p, err := New(Options{Wake: func(c net.Conn, closed func(), state any) {
		wokenClosed, wokenState = closed, state
		woken <- c
	}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s, c := pair(t, ln)
	released := make(chan string, 2)
	if err := p.Park(s, 200*time.Millisecond, func() { released <- "first" }, "its state"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Read(make([]byte, 1)); err == nil {
		t.Fatal("the parked net.Conn still reads")
	}
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	var w net.Conn
	select {
	case w = <-woken:
	case <-time.After(5 * time.Second):
		t.Fatal("not woken")
	}
	defer w.Close()
	if wokenState != "its state" {
		t.Errorf("Wake got state %v, want Park's", wokenState)
	}
	b := make([]byte, 1)
	_ = w.SetReadDeadline(time.Now().Add(time.Second))
	if _, err := io.ReadFull(w, b); err != nil || b[0] != 'x' {
		t.Fatalf("woken read %q %v, want x", b, err)
	}
	select {
	case r := <-released:
		t.Fatalf("closed (%s) called on a wake", r)
	default:
	}
	wokenClosed() // the caller's now
	if r := <-released; r != "first" {
		t.Fatalf("Wake's closed is %s's", r)
	}
	// Parked again and left to expire: closed is called, the client sees EOF.
	if err := p.Park(w.(Conn), 200*time.Millisecond, func() { released <- "second" }, nil); err != nil {
		t.Fatal(err)
	}
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(b); err != io.EOF {
		t.Fatalf("client read %v, want EOF once it expired", err)
	}
	select {
	case r := <-released:
		if r != "second" {
			t.Fatalf("closed of %s called", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("closed not called on expiry")
	}
}

// TestExpireWithState: a connection parked with a state is handed to
// Options.Expire when it expires, and when the Parker closes, over a
// net.Conn it can still write its goodbye on; one without a state is
// closed at once.
func TestExpireWithState(t *testing.T) {
	ln := listen(t)
	type expired struct {
		c     net.Conn
		state any
	}
	ended := make(chan expired, 2)
	p, err := New(Options{Wake: func(net.Conn, func(), any) {}, Expire: func(c net.Conn, closed func(), state any) {
		ended <- expired{c, state}
	}})
	if err != nil {
		t.Fatal(err)
	}
	s, c := pair(t, ln)
	if err := p.Park(s, 50*time.Millisecond, nil, "expires"); err != nil {
		t.Fatal(err)
	}
	s2, c2 := pair(t, ln)
	if err := p.Park(s2, 0, nil, "at close"); err != nil {
		t.Fatal(err)
	}
	s3, c3 := pair(t, ln)
	if err := p.Park(s3, 50*time.Millisecond, nil, nil); err != nil {
		t.Fatal(err)
	}
	for _, want := range []struct {
		state  any
		client net.Conn
	}{{"expires", c}, {"at close", c2}} {
		if want.state == "at close" {
			if err := p.Close(); err != nil {
				t.Fatal(err)
			}
		}
		var e expired
		select {
		case e = <-ended:
		case <-time.After(5 * time.Second):
			t.Fatalf("Expire not called for the connection parked with %q", want.state)
		}
		if e.state != want.state {
			t.Fatalf("Expire got state %v, want %v", e.state, want.state)
		}
		if _, err := io.WriteString(e.c, "bye"); err != nil {
			t.Fatalf("writing a goodbye on the expired connection: %v", err)
		}
		e.c.Close()
		b, err := io.ReadAll(want.client)
		if err != nil || string(b) != "bye" {
			t.Errorf("client of %q read %q, %v; want the goodbye, then EOF", want.state, b, err)
		}
	}
	_ = c3.SetReadDeadline(time.Now().Add(5 * time.Second))
	if b, err := io.ReadAll(c3); err != nil || len(b) != 0 {
		t.Errorf("the connection parked without a state: read %q, %v; want EOF at once", b, err)
	}
}

// TestIdleListsGo: connections parked with many idle times leave no
// expiry list behind once they are gone.
func TestIdleListsGo(t *testing.T) {
	ln := listen(t)
	p, err := New(Options{Wake: func(net.Conn, func(), any) {}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	clients := make([]net.Conn, 20)
	for i := range clients {
		s, c := pair(t, ln)
		clients[i] = c
		if err := p.Park(s, time.Duration(10+i)*time.Millisecond, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range clients {
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadAll(c); err != nil {
			t.Fatal(err)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		p.mu.Lock()
		n, parked := len(p.queues), len(p.byFD)
		p.mu.Unlock()
		if parked == 0 && n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d expiry lists left with %d connections parked, want none", n, parked)
		}
	}
}

// TestEndedCounted: Options.Ended hears of every connection the Parker
// closes (its idle time, its caller's end, the Parker's Close), and not of
// one it wakes.
func TestEndedCounted(t *testing.T) {
	ln := listen(t)
	var mu sync.Mutex
	ended := 0
	p, err := New(Options{Wake: func(c net.Conn, _ func(), _ any) { c.Close() }, Ended: func() { mu.Lock(); ended++; mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return ended }
	expires, _ := pair(t, ln)
	leaves, leaver := pair(t, ln)
	wakes, waker := pair(t, ln)
	stays, _ := pair(t, ln)
	for _, c := range []struct {
		c    Conn
		idle time.Duration
	}{{expires, 20 * time.Millisecond}, {leaves, 0}, {wakes, 0}, {stays, 0}} {
		if err := p.Park(c.c, c.idle, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	leaver.Close()
	if _, err := waker.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); count() < 2 || p.Parked() != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Ended heard of %d, %d parked; want 2 (expired, left) and 1 parked", count(), p.Parked())
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if got := count(); got != 3 {
		t.Errorf("Ended heard of %d connections, want 3 (expired, left, closed with the Parker; not the woken one)", got)
	}
}
