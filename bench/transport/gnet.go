package main

import (
	"bufio"
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"github.com/valyala/fasthttp"
)

// maxHeader bounds a request's line and header fields on the gnet server.
const maxHeader = 8 << 10

var errTooLarge = errors.New("request header fields over 8 KiB")
var errChunked = errors.New("chunked request bodies are not built in this spike")

// parser feeds one complete header block to fasthttp's parser:
// fasthttp.RequestHeader.Read takes only a bufio.Reader and blocks for more
// bytes, so the loop first finds the blank line itself (bytes.Index) and
// hands the parser the whole block; an incomplete block waits for the
// next read.
type parser struct {
	src bytes.Reader
	br  *bufio.Reader
}

var parsers = sync.Pool{New: func() any {
	p := &parser{}
	p.br = bufio.NewReaderSize(&p.src, maxHeader)
	return p
}}

// parseRequest parses the request at the start of b into h and returns
// how many bytes of b it took, 0 when b holds no whole request yet.
func parseRequest(b []byte, h *fasthttp.RequestHeader) (int, error) {
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 {
		if len(b) > maxHeader {
			return 0, errTooLarge
		}
		return 0, nil
	}
	n := end + 4
	p := parsers.Get().(*parser)
	p.src.Reset(b[:n])
	p.br.Reset(&p.src)
	err := h.Read(p.br)
	parsers.Put(p)
	if err != nil {
		return 0, err
	}
	switch cl := h.ContentLength(); {
	case cl == -1:
		return 0, errChunked
	case cl > 0:
		if len(b) < n+cl {
			return 0, nil
		}
		n += cl
	}
	return n, nil
}

// date is the Date field of hand-written answers, renewed every second.
var date atomic.Pointer[[]byte]

func renewDate() {
	for {
		d := []byte("Date: " + time.Now().UTC().Format(time.RFC1123) + "\r\n")
		d = bytes.Replace(d, []byte("UTC"), []byte("GMT"), 1)
		date.Store(&d)
		time.Sleep(time.Second)
	}
}

// append429 appends the fixed rejection to dst.
func append429(dst []byte) []byte {
	dst = append(dst, "HTTP/1.1 429 Too Many Requests\r\n"...)
	dst = append(dst, *date.Load()...)
	dst = append(dst, "Content-Type: text/plain\r\nContent-Length: 18\r\n\r\n"...)
	return append(dst, body...)
}

type gnetServer struct {
	gnet.BuiltinEventEngine
	headers sync.Pool
}

// OnTraffic answers every whole request the connection has buffered, in
// one write.
func (s *gnetServer) OnTraffic(c gnet.Conn) gnet.Action {
	b, _ := c.Peek(-1)
	h := s.headers.Get().(*fasthttp.RequestHeader)
	defer s.headers.Put(h)
	var out []byte
	done, action := 0, gnet.None
	for done < len(b) {
		h.Reset()
		n, err := parseRequest(b[done:], h)
		if err != nil {
			out = append(out, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"...)
			action = gnet.Close
			break
		}
		if n == 0 {
			break
		}
		done += n
		_ = h.Peek("X-Api-Key")
		out = append429(out)
		if h.ConnectionClose() {
			action = gnet.Close
			break
		}
	}
	_, _ = c.Discard(done)
	if len(out) > 0 {
		_, _ = c.Write(out)
	}
	return action
}

func serveGnet(addr string) error {
	d := []byte{}
	date.Store(&d)
	go renewDate()
	s := &gnetServer{headers: sync.Pool{New: func() any { return new(fasthttp.RequestHeader) }}}
	return gnet.Run(s, "tcp://"+addr, gnet.WithMulticore(true), gnet.WithReusePort(true))
}
