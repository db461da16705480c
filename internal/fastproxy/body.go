package fastproxy

import (
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// A Body is a caller's request body on its way to the upstream
// (Proxy.Serve): what was read of it before the request went on
// (Buffers.Read), then the rest as it arrives. Its Read fills what it is
// given as far as the body goes, whatever the caller's chunks: fasthttp
// writes, and flushes, what each Read returns as one chunk, so a body sent
// in 1-byte chunks went on as 1-byte writes (6 MB cost 2 s of CPU). A
// request's upload then reaches the upstream in the client's 4 KiB
// buffers; it could not answer before the body's end anyway (fasthttp
// reads the answer once the request is written).
type Body struct {
	src      io.Reader
	start    time.Time // when the body timeout started
	deadline time.Time // when it ends (SetBodyDeadline)
	want     int64     // Content-Length, -1 when chunked
	pre      []byte    // read before it went on, still to be sent
	whole    bool      // pre is all there is
	got      int64
	before   time.Duration // waited for the caller before it went on (Buffers.Read)
	mu       sync.Mutex
	waited   time.Duration // waited for the caller while the upstream waited for it
	// late: the read from the caller that failed first began after the
	// deadline had passed, while sluice was busy sending the body on: the
	// upstream kept it.
	late bool
	err  error // io.EOF once read to the end
	// Held by Buffers.Read, given back by Release.
	from *Buffers
	held int64
	buf  *[]byte // pooled (chunked bodies)
}

// NewBody returns the body of the request ctx serves, to be sent as it
// arrives; nil when it has none. start is when its body timeout started,
// deadline when it ends (SetBodyDeadline): a timeout reading it is the
// upstream's fault (504) when the deadline passed while sluice was not
// waiting for the caller (the upstream did not take what was read), or
// when sluice spent less than half the time since waiting for the caller.
func NewBody(ctx *fasthttp.RequestCtx, start, deadline time.Time) *Body {
	n := ctx.Request.Header.ContentLength()
	if n <= 0 && n != -1 {
		return nil
	}
	st := ctx.RequestBodyStream()
	if st == nil {
		return nil
	}
	return &Body{src: st, start: start, deadline: deadline, want: int64(n)}
}

// Read fills p from what was read before, then from the caller, until p
// is full or the body has ended.
func (b *Body) Read(p []byte) (int, error) {
	n := copy(p, b.pre)
	b.pre = b.pre[n:]
	if b.whole && len(b.pre) == 0 {
		return n, io.EOF
	}
	if n == len(p) {
		return n, nil
	}
	t0 := time.Now()
	k, err := b.fill(p[n:], t0)
	b.mu.Lock()
	b.waited += time.Since(t0)
	b.mu.Unlock()
	return n + k, err
}

// fill reads from the caller into buf until it is full or the body ends
// (io.EOF) or fails, remembering how it ended (late: the first failure
// came in a fill begun, at t0, after the deadline). Its clock and lock
// are once per call, not per read: a caller's 1-byte chunks are one read
// each.
func (b *Body) fill(buf []byte, t0 time.Time) (int, error) {
	n := 0
	var err error
	for n < len(buf) && err == nil {
		var k int
		k, err = b.src.Read(buf[n:])
		n += k
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got += int64(n)
	if err == io.EOF && b.want >= 0 && b.got < b.want {
		err = io.ErrUnexpectedEOF // the caller went: fasthttp's stream reads that as the end
	}
	if err != nil && b.err == nil {
		b.err = err
		b.late = !b.deadline.IsZero() && !t0.Before(b.deadline)
	}
	return n, err
}

// Waited is how long the upstream waited for the caller's body once Serve
// began to send it: the time in the request's upload that is the caller's
// and not the upstream's. 0 for a body read whole before (Buffers.Read).
func (b *Body) Waited() time.Duration {
	if b == nil {
		return 0
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waited
}

// upstreamSlow reports whether the body timeout passed while sluice was
// not waiting for the caller (a read began after it, the time having gone
// by in sending what was read to the upstream), or while sluice had spent
// less than half of it waiting for the caller, the rest waiting for the
// upstream to take what was read. A caller that trickles its body keeps
// sluice waiting in a read when the deadline strikes: its fault.
func (b *Body) upstreamSlow() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.late || 2*(b.before+b.waited) < time.Since(b.start)
}

func (b *Body) ended() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.err
}

// Release gives back what the body holds of its Buffers, once nothing
// reads it any more (Serve has returned). It is safe on nil and more than
// once.
func (b *Body) Release() {
	if b == nil || b.from == nil {
		return
	}
	b.from.used.Add(-b.held)
	if b.buf != nil {
		b.from.pool.Put(b.buf)
	}
	b.from, b.held, b.buf, b.pre = nil, 0, nil, nil
}

// Buffers are the room request bodies are read into before they go on:
// at most Each bytes for one body and Total for all at once in the
// process. A body read whole before its request takes a slot of the
// service (protect) never holds one while its caller uploads it.
type Buffers struct {
	each  int
	total int64
	used  atomic.Int64
	pool  sync.Pool // *[]byte of each+1 bytes, for chunked bodies
}

// NewBuffers returns Buffers for bodies of at most each bytes, total
// bytes at once.
func NewBuffers(each int, total int64) *Buffers {
	bs := &Buffers{each: each, total: total}
	bs.pool.New = func() any { b := make([]byte, each+1); return &b }
	return bs
}

// Used is the room the bodies read now hold, in bytes.
func (bs *Buffers) Used() int64 { return bs.used.Load() }

// Read reads the body of the request ctx serves (start and deadline as for NewBody)
// before the request goes on. One of at most bs's each bytes, while bs has
// room for it, is read whole: whole is true, and the body holds its room
// until Release (a chunked one holds each+1 bytes: one more tells a larger
// body). A larger body, or one that finds bs full, is not read: whole is
// false, and it goes on as it arrives (what was read of a larger chunked
// one first). A nil Body with whole true: the request has none. On err,
// the body could not be read (answer it with BodyError); nothing is held.
func (bs *Buffers) Read(ctx *fasthttp.RequestCtx, start, deadline time.Time) (b *Body, whole bool, err error) {
	b = NewBody(ctx, start, deadline)
	if b == nil {
		return nil, true, nil
	}
	size := b.want
	if size < 0 {
		size = int64(bs.each) + 1
	}
	if b.want > int64(bs.each) || !bs.reserve(size) {
		return b, false, nil
	}
	b.from, b.held = bs, size
	var buf []byte
	if b.want < 0 {
		b.buf = bs.pool.Get().(*[]byte)
		buf = *b.buf
	} else {
		buf = make([]byte, size)
	}
	t0 := time.Now()
	n, err := b.fill(buf, t0)
	b.before = time.Since(t0)
	b.pre = buf[:n]
	switch {
	case err == io.EOF || err == nil && b.want >= 0:
		b.whole = true
		return b, true, nil
	case err != nil:
		b.Release()
		return nil, false, err
	}
	return b, false, nil // chunked, larger than each: the rest streams
}

// reserve takes n bytes of bs's room, if it has them.
func (bs *Buffers) reserve(n int64) bool {
	for {
		used := bs.used.Load()
		if used+n > bs.total {
			return false
		}
		if bs.used.CompareAndSwap(used, used+n) {
			return true
		}
	}
}

// BodyError answers a request whose body Buffers.Read could not read:
// 408 when it was too slow, 400 when it was malformed, nothing when the
// caller went; the connection closes after it.
func BodyError(ctx *fasthttp.RequestCtx, err error) Outcome {
	out, _ := callerFailed(ctx, err)
	return out
}
