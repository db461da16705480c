package fastfront

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"sync/atomic"

	"github.com/valyala/fasthttp"
)

// RequestIDHeader names a request for its caller, the upstream and the
// access log: kept when the caller sent a sane one, made otherwise.
const RequestIDHeader = "X-Request-Id"

// requestIDs makes request ids: 16 bytes in hex, a random prefix drawn
// once per process followed by a counter started at random, so that ids
// are unique without asking for randomness per request.
type requestIDs struct {
	prefix [16]byte // 8 random bytes in hex
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	var seed [16]byte
	_, _ = rand.Read(seed[:]) // never fails (crypto/rand)
	r := &requestIDs{}
	hex.Encode(r.prefix[:], seed[:8])
	r.n.Store(binary.BigEndian.Uint64(seed[8:]))
	return r
}

// next appends a new id to b.
func (r *requestIDs) next(b []byte) []byte {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], r.n.Add(1))
	b = append(b, r.prefix[:]...)
	return hex.AppendEncode(b, n[:])
}

// saneRequestID reports whether id, as a caller sent it, is kept: 1 to
// 128 visible ASCII characters, no spaces.
func saneRequestID(id []byte) bool {
	if len(id) == 0 || len(id) > 128 {
		return false
	}
	for _, c := range id {
		if c <= ' ' || c > '~' {
			return false
		}
	}
	return true
}

// requestID makes sure the request ctx serves carries a sane
// X-Request-Id, which goes on to the upstream with it: the caller's, or
// a new one in its place. Every answer carries it back (answerID).
func (f *Front) requestID(ctx *fasthttp.RequestCtx) {
	h := &ctx.Request.Header
	// One look at the fields, the common case (no id sent) adding one
	// without looking again.
	switch ids := h.PeekAll(RequestIDHeader); {
	case len(ids) == 1 && saneRequestID(ids[0]):
		return
	case len(ids) > 0:
		h.Del(RequestIDHeader) // every line of it: one id goes on
	}
	var b [32]byte
	h.AddBytesV(RequestIDHeader, f.requestIDs.next(b[:0]))
}

// answerID returns the request's id to its caller on whatever answers it.
func answerID(ctx *fasthttp.RequestCtx) {
	ctx.Response.Header.SetCanonical(canonicalName(RequestIDHeader), ctx.Request.Header.Peek(RequestIDHeader))
}
