package fastproxy

import (
	"bytes"
	"errors"
)

// fasthttp takes a header block's empty line as its end only once the
// bytes it holds of the request have a CRLF CRLF in them somewhere (so
// that it frames the stream as a reader that knows no other end would):
// a block whose empty line ends in a bare LF ("Host: x\n\n", "Host:
// x\r\n\n", "Host: x\n\r\n"), with nothing after it, is waited on until
// the header timeout. The server's connection watches for one with a
// HeaderEnd and fails the read fasthttp then waits on with ErrBareLFEnd,
// which the server answers 400 at once. Refuse answers such a block
// 400 too when more followed it, so that it is refused whatever follows.
//
// What a HeaderEnd sees starts where the server went back to waiting
// (the connection's ConnState idle): a block that arrived in one read
// with the request before it (pipelined) and nothing after it is not
// seen whole, and is answered 408 at the header timeout, as a block that
// never ends is.

// ErrBareLFEnd fails the read of a request whose header block ended in a
// bare LF, which fasthttp would wait on until the header timeout.
var ErrBareLFEnd = errors.New("fastproxy: the request's header block ends in a bare LF")

// HeaderEnd watches the bytes a connection delivers from when a request's
// header block may start (Begin: the connection opened, or the server
// went back to waiting for a request) until the server has read it
// (Done). The zero HeaderEnd watches nothing. It is used by the goroutine
// that serves the connection only.
type HeaderEnd struct {
	on       bool
	tail     [3]byte // the last three bytes seen
	bareEnd  bool    // an empty line ended by a bare LF, or after a line that was
	crlfCRLF bool    // a CRLF CRLF
}

// Begin starts watching: the bytes delivered from now on may be a header
// block.
func (h *HeaderEnd) Begin() { *h = HeaderEnd{on: true} }

// Done stops watching: the server has read the header block.
func (h *HeaderEnd) Done() { h.on = false }

// See looks at p, bytes the connection delivered.
func (h *HeaderEnd) See(p []byte) {
	if !h.on || len(p) == 0 {
		return
	}
	for i := bytes.IndexByte(p, '\n'); i >= 0; {
		h.sawLF(h.before(p, i, 1), h.before(p, i, 2), h.before(p, i, 3))
		j := bytes.IndexByte(p[i+1:], '\n')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	for _, c := range p[max(len(p)-3, 0):] {
		h.tail = [3]byte{h.tail[1], h.tail[2], c}
	}
}

// before returns the byte k places before p[i], from the tail of what
// came before p if need be.
func (h *HeaderEnd) before(p []byte, i, k int) byte {
	if i >= k {
		return p[i-k]
	}
	return h.tail[3-(k-i)]
}

// sawLF notes an LF whose three bytes before were b1 (just before), b2, b3.
func (h *HeaderEnd) sawLF(b1, b2, b3 byte) {
	switch {
	case b1 == '\n': // "\n\n": an empty line of a bare LF
		h.bareEnd = true
	case b1 == '\r' && b2 == '\n' && b3 == '\r': // "\r\n\r\n"
		h.crlfCRLF = true
	case b1 == '\r' && b2 == '\n': // "\n\r\n": an empty line after a line ended by a bare LF
		h.bareEnd = true
	}
}

// Stuck reports whether the server, reading a header block, would wait
// for ever on what it has: the block has ended in a bare LF and nothing
// has brought a CRLF CRLF. A read it asks for then is to fail with
// ErrBareLFEnd.
func (h *HeaderEnd) Stuck() bool { return h.on && h.bareEnd && !h.crlfCRLF }
