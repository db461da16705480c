package rls

import (
	"bytes"
	"errors"
	"net"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// rawConn is a raw HTTP/2 connection to a server on 127.0.0.1, as an
// attacker holds it: gRPC's client would send each call's message.
type rawConn struct {
	t  *testing.T
	c  net.Conn
	fr *http2.Framer
}

// dialRaw connects to addr and sends greeting: http2.ClientPreface and an
// empty SETTINGS frame for a well-behaved start, less for a bad one.
func dialRaw(t *testing.T, addr string, greeting []byte) *rawConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if _, err := c.Write(greeting); err != nil {
		t.Fatal(err)
	}
	return &rawConn{t: t, c: c, fr: http2.NewFramer(c, c)}
}

// greeting is the client preface and an empty SETTINGS frame.
var greeting = []byte(http2.ClientPreface + "\x00\x00\x00\x04\x00\x00\x00\x00\x00")

// callHeaders is the header block of a ShouldRateLimit call, encoded
// without indexing so that every stream may send it as it is.
var callHeaders = func() []byte {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "rls"},
		{":path", "/" + serviceName + "/ShouldRateLimit"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1], Sensitive: true})
	}
	return b.Bytes()
}()

// calls opens n calls, stream IDs from first on, each with its HEADERS
// and no message.
func (r *rawConn) calls(first uint32, n int) {
	r.t.Helper()
	for id := first; id < first+2*uint32(n); id += 2 {
		if err := r.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: callHeaders, EndHeaders: true}); err != nil {
			r.t.Fatal(err)
		}
	}
}

// closedWithin reports whether the server closes the connection within d,
// the frames it sends meanwhile read and dropped.
func (r *rawConn) closedWithin(d time.Duration) bool {
	_ = r.c.SetReadDeadline(time.Now().Add(d))
	var buf [4096]byte
	for {
		if _, err := r.c.Read(buf[:]); err != nil {
			return !errors.Is(err, os.ErrDeadlineExceeded)
		}
	}
}

// resets counts the calls a server has ended on some raw connections.
type resets struct{ n atomic.Int64 }

// watchResets reads the frames of conns, each on its own goroutine until
// it closes, counting each stream the server ends (by RST_STREAM, or by
// trailers that end it) once.
func watchResets(conns ...*rawConn) *resets {
	r := &resets{}
	for _, c := range conns {
		_ = c.c.SetReadDeadline(time.Time{})
		go func() {
			ended := map[uint32]bool{}
			for {
				f, err := c.fr.ReadFrame()
				if err != nil {
					return
				}
				id := f.Header().StreamID
				if h, ok := f.(*http2.HeadersFrame); ok && h.StreamEnded() || f.Header().Type == http2.FrameRSTStream {
					if !ended[id] {
						ended[id] = true
						r.n.Add(1)
					}
				}
			}
		}()
	}
	return r
}

// reach polls, for up to 10s, until at least n calls have ended, and
// returns how many have.
func (r *resets) reach(n int64) int64 {
	for end := time.Now().Add(10 * time.Second); r.n.Load() < n && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	return r.n.Load()
}

// goroutinesAtMost polls, for up to 10s, until at most n goroutines run,
// and returns the last count.
func goroutinesAtMost(n int) int {
	got := runtime.NumGoroutine()
	for end := time.Now().Add(10 * time.Second); got > n && time.Now().Before(end); got = runtime.NumGoroutine() {
		time.Sleep(20 * time.Millisecond)
	}
	return got
}
