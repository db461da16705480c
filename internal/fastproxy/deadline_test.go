package fastproxy_test

import (
	"net"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/internal/fastproxy"
)

// TestDeadlineNeverEarly: a read that starts soon after the one that set
// the deadline (within Wait/8, when the deadline is left where it was) is
// still given the whole of Wait, and then times out. The first read arms
// the deadline; the second, 20ms later, finds it armed and waits on it: it
// fired 20ms before the second read had had Wait, until the Deadline moved
// it on.
func TestDeadlineNeverEarly(t *testing.T) {
	a, b := tcpPair(t)
	const wait = 400 * time.Millisecond
	d := fastproxy.Deadline{Wait: wait}
	if _, err := b.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	var p [1]byte
	if n, err := d.Read(a, p[:]); n != 1 || err != nil {
		t.Fatalf("first read: %d, %v", n, err)
	}
	time.Sleep(20 * time.Millisecond) // < wait/8: the deadline stays armed from the first read
	start := time.Now()
	n, err := d.Read(a, p[:]) // nothing comes
	took := time.Since(start)
	var ne net.Error
	if n != 0 || err == nil || !asNetError(err, &ne) || !ne.Timeout() {
		t.Fatalf("second read: %d, %v; want a timeout", n, err)
	}
	if took < wait {
		t.Errorf("second read gave up after %v, before its %v", took, wait)
	}
	// The connection still works after the timeout, with a fresh deadline.
	if _, err := b.Write([]byte("y")); err != nil {
		t.Fatal(err)
	}
	if n, err := d.Read(a, p[:]); n != 1 || err != nil || p[0] != 'y' {
		t.Fatalf("read after the timeout: %d %q, %v", n, p[:n], err)
	}
}

// TestDeadlineWriteStalls: a write to a peer that reads nothing fails with
// a timeout once it has waited Wait, never before, having written what the
// socket buffers took.
func TestDeadlineWriteStalls(t *testing.T) {
	a, _ := tcpPair(t)
	const wait = 300 * time.Millisecond
	d := fastproxy.Deadline{Wait: wait}
	if _, err := d.Write(a, []byte("x")); err != nil {
		t.Fatal(err)
	}
	big := make([]byte, 64<<20) // more than any socket buffer holds
	start := time.Now()
	n, err := d.Write(a, big)
	took := time.Since(start)
	var ne net.Error
	if err == nil || !asNetError(err, &ne) || !ne.Timeout() || n == len(big) {
		t.Fatalf("write: %d of %d, %v; want a timeout", n, len(big), err)
	}
	if took < wait {
		t.Errorf("write gave up after %v, before its %v", took, wait)
	}
}

func asNetError(err error, ne *net.Error) bool {
	e, ok := err.(net.Error)
	*ne = e
	return ok
}

// tcpPair returns the two ends of a loopback TCP connection.
func tcpPair(t *testing.T) (net.Conn, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	acc := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		acc <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b := <-acc
	if b == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}
