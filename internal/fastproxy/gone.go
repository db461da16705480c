package fastproxy

import (
	"context"
	"time"

	"github.com/valyala/fasthttp"
)

// A request may wait in the gateway before it goes on: held for its turn
// by a rule's delay, or in protect's queue. A caller that hangs up
// meanwhile must give its turn or its place back at once, not when the
// wait ends. fasthttp does not read a connection while its handler runs,
// so for such waits (a request without a body, under a configuration that
// can make it wait) the server reads the connection itself, in the
// background, as net/http does for every request: a byte that arrives (the
// next pipelined request) is kept for the server to read, and the end of
// the connection cancels the wait.

// WatchGone returns a context that ends, with context.Canceled, when the
// caller of ctx closes its connection, and the function that stops
// watching; it must run before the handler returns. Nil stop: the
// connection cannot be watched, parent is returned as it is.
func WatchGone(parent context.Context, ctx *fasthttp.RequestCtx) (context.Context, func()) {
	c := watchedConn(ctx.Conn())
	if c == nil {
		return parent, nil
	}
	wctx, cancel := context.WithCancelCause(parent)
	done := make(chan struct{})
	_ = c.Conn.SetReadDeadline(time.Time{}) // the header timeout's deadline no longer applies
	go func() {
		defer close(done)
		var b [1]byte
		n, err := c.Conn.Read(b[:])
		if n == 1 {
			c.peeked = append(c.peeked, b[0])
		}
		if err != nil && !isTimeout(err) {
			cancel(context.Canceled) // the caller went
		}
	}()
	return wctx, func() {
		_ = c.Conn.SetReadDeadline(time.Unix(1, 0)) // ends the read
		<-done
		_ = c.Conn.SetReadDeadline(time.Time{})
		cancel(nil)
	}
}
