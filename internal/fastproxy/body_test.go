package fastproxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/sluice-rl/sluice/internal/fastproxy"
)

// Buffers hold at most their total for the whole process: a body that
// finds no room is not read first (it streams), and room given back is
// taken again.
func TestBuffersTotal(t *testing.T) {
	bs := fastproxy.NewBuffers(8, 16) // two bodies of 8 bytes
	type result struct {
		whole bool
		err   error
	}
	results := make(chan result)
	release := make(chan struct{})
	front := serveFast(t, func(ctx *fasthttp.RequestCtx) {
		b, whole, err := bs.Read(ctx, time.Now(), time.Time{})
		results <- result{whole, err}
		<-release
		_, _ = io.Copy(io.Discard, b) // what streams is read on, as Serve would
		b.Release()
	})
	send := func() net.Conn {
		c, err := net.Dial("tcp", front)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_, _ = io.WriteString(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 8\r\n\r\n12345678")
		return c
	}
	for i, want := range []bool{true, true, false} {
		send()
		select {
		case r := <-results:
			if r.err != nil || r.whole != want {
				t.Errorf("body %d: whole %v, err %v; want whole %v", i, r.whole, r.err, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("body %d: no result", i)
		}
	}
	if got := bs.Used(); got != 16 {
		t.Errorf("Used %d while two bodies are held, want 16", got)
	}
	close(release)
	deadline := time.Now().Add(10 * time.Second)
	for bs.Used() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if got := bs.Used(); got != 0 {
		t.Errorf("Used %d once every body is released, want 0", got)
	}
}

// countingUpstream answers every request 200 after reading its body, and
// counts the reads its connections made (the upstream's receives).
type countingUpstream struct {
	ln    net.Listener
	reads atomic.Int64
}

func newCountingUpstream(tb testing.TB) *countingUpstream {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	u := &countingUpstream{ln: ln}
	tb.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go u.serve(c)
		}
	}()
	return u
}

func (u *countingUpstream) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(readCounter{c, &u.reads})
	for {
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		n, _ := io.Copy(io.Discard, r.Body)
		body := fmt.Sprint(n)
		if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", len(body), body); err != nil {
			return
		}
	}
}

type readCounter struct {
	net.Conn
	n *atomic.Int64
}

func (r readCounter) Read(p []byte) (int, error) {
	r.n.Add(1)
	return r.Conn.Read(p)
}

// chunked frames body in chunks of size bytes.
func chunked(body string, size int) string {
	var b strings.Builder
	for i := 0; i < len(body); i += size {
		part := body[i:min(i+size, len(body))]
		fmt.Fprintf(&b, "%x\r\n%s\r\n", len(part), part)
	}
	return b.String() + "0\r\n\r\n"
}

// BenchmarkUploadChunks sends a 256 KiB chunked body through the proxy in
// chunks of 1 byte and of 16 KiB: each 1-byte chunk went on as a flushed
// write of its own (the upstream's receives per op show it); the body is
// now coalesced, so the cost per byte differs by the parsing of the
// caller's chunks only.
//
//	go test -run XXX -bench UploadChunks -benchmem ./internal/fastproxy/
func BenchmarkUploadChunks(b *testing.B) {
	up := newCountingUpstream(b)
	p := fastproxy.New(&url.URL{Scheme: "http", Host: up.ln.Addr().String()}, 10*time.Second)
	b.Cleanup(p.Close)
	front := serveFast(b, func(ctx *fasthttp.RequestCtx) {
		f := fastproxy.Forwarding{Peer: ctx.RemoteAddr().(*net.TCPAddr).AddrPort().Addr()}
		_, _ = p.Serve(ctx, &f, fastproxy.NewBody(ctx, time.Now(), time.Time{}), nil)
	})
	body := strings.Repeat("a", 256<<10)
	for _, size := range []int{1, 16 << 10} {
		b.Run(fmt.Sprintf("chunk=%d", size), func(b *testing.B) {
			raw := "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(body, size)
			c, err := net.Dial("tcp", front)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			br := bufio.NewReader(c)
			b.SetBytes(int64(len(body)))
			reads := up.reads.Load()
			for b.Loop() {
				if _, err := io.WriteString(c, raw); err != nil {
					b.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					b.Fatal(err)
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(got) != fmt.Sprint(len(body)) {
					b.Fatalf("the upstream read %s bytes, want %d", got, len(body))
				}
			}
			b.ReportMetric(float64(up.reads.Load()-reads)/float64(b.N), "upstream-reads/op")
		})
	}
}
