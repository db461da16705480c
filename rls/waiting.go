package rls

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/tap"
)

// waitingCalls are the calls, over every connection of a server, whose
// HEADERS have arrived and whose request message has not: each holds a
// goroutine in gRPC's transport (a unary handler runs only once its
// message is read), and a caller may open such calls at no cost to itself
// but the HEADERS frame. A call leaves when its message is read, or is
// reset: its message has not arrived within timeout, or max calls are
// waiting and it has waited longest. A call that ends without a message
// (an unknown method, the caller's RST_STREAM) is dropped from the list
// when it would be reset, without being counted.
//
// Evicting the call that has waited longest, rather than refusing the
// newest, keeps the bound from locking Envoy out: its message follows its
// HEADERS at once, so a flood of calls that never send one evicts its own
// calls, and only a call that has waited longer than max newer ones is
// reset.
//
// One timer serves the list: every call waits the same timeout, so the
// oldest is the first due. A call costs the server two lock round trips
// and a context, no timer of its own.
type waitingCalls struct {
	timeout time.Duration
	max     int
	// timedOut and evicted count the calls reset for each reason.
	timedOut, evicted prometheus.Counter

	mu             sync.Mutex
	n              int
	oldest, newest *waitingCall // the calls waiting, in the order they came
	sweep          *time.Timer  // runs expire; armed while the list is not empty
	armed          bool
}

// waitingCall is one call on the waitingCalls list, and the call's
// context: the one tap makes, which reset ends, with the call itself as
// the value of waitingKey (one allocation fewer per call than a
// context.WithValue on top).
type waitingCall struct {
	context.Context
	reset      context.CancelFunc // ends the context: gRPC then ends the call
	due        time.Time          // when its message is late
	prev, next *waitingCall       // on the list, while listed
	listed     bool
}

// waitingKey is the context key of a call's *waitingCall.
type waitingKey struct{}

// Value is the call for waitingKey, else its context's value.
func (c *waitingCall) Value(key any) any {
	if key == (waitingKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// newWaitingCalls returns an empty list whose calls wait at most timeout
// for their message, at most max of them at once.
func newWaitingCalls(timeout time.Duration, max int, timedOut, evicted prometheus.Counter) *waitingCalls {
	w := &waitingCalls{timeout: timeout, max: max, timedOut: timedOut, evicted: evicted}
	w.sweep = time.AfterFunc(timeout, w.expire)
	w.sweep.Stop()
	return w
}

// tap is the server's tap.ServerInHandle, called (under its connection's
// lock) for every call's HEADERS: the call joins the list, and the
// longest waiting leaves it, reset, if the list was full.
func (w *waitingCalls) tap(ctx context.Context, _ *tap.Info) (context.Context, error) {
	ctx, reset := context.WithCancel(ctx)
	c := &waitingCall{Context: ctx, reset: reset, due: time.Now().Add(w.timeout)}
	w.mu.Lock()
	if w.n >= w.max {
		w.cut(w.oldest, w.evicted)
	}
	w.link(c)
	if !w.armed {
		w.armed = true
		w.sweep.Reset(w.timeout)
	}
	w.mu.Unlock()
	return c, nil
}

// expire resets the calls whose message is late, and sets the timer for
// the next one due.
func (w *waitingCalls) expire() {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for w.oldest != nil && !w.oldest.due.After(now) {
		w.cut(w.oldest, w.timedOut)
	}
	w.armed = w.oldest != nil
	if w.armed {
		w.sweep.Reset(w.oldest.due.Sub(now))
	}
}

// cut takes c off the list and resets it, counting it on n unless it has
// already ended; w.mu is held. Ending a call's context takes no lock of
// gRPC's: its transport sees it on the call's own goroutine.
func (w *waitingCalls) cut(c *waitingCall, n prometheus.Counter) {
	w.unlink(c)
	if c.Err() == nil {
		c.reset()
		n.Inc()
	}
}

// unary is the server's unary interceptor: gRPC calls it once the call's
// message is read.
func (w *waitingCalls) unary(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	w.received(ctx)
	return h(ctx, req)
}

// stream is the server's stream interceptor (health's Watch, reflection):
// the call leaves the list at its first message.
func (w *waitingCalls) stream(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
	return h(srv, firstMessage{ss, w})
}

// firstMessage is a streaming call that leaves the list when a message
// is read.
type firstMessage struct {
	grpc.ServerStream
	calls *waitingCalls
}

// RecvMsg reads a message, and takes the call off the list if it did.
func (s firstMessage) RecvMsg(m any) error {
	err := s.ServerStream.RecvMsg(m)
	if err == nil {
		s.calls.received(s.Context())
	}
	return err
}

// received takes the call of ctx off the list, if it is still on it: its
// message has arrived.
func (w *waitingCalls) received(ctx context.Context) {
	c, ok := ctx.Value(waitingKey{}).(*waitingCall)
	if !ok {
		return
	}
	w.mu.Lock()
	if c.listed {
		w.unlink(c)
	}
	w.mu.Unlock()
}

// link appends c to the list; w.mu is held.
func (w *waitingCalls) link(c *waitingCall) {
	c.prev, c.listed = w.newest, true
	if w.newest != nil {
		w.newest.next = c
	} else {
		w.oldest = c
	}
	w.newest = c
	w.n++
}

// unlink takes c, listed, off the list; w.mu is held.
func (w *waitingCalls) unlink(c *waitingCall) {
	if c.prev != nil {
		c.prev.next = c.next
	} else {
		w.oldest = c.next
	}
	if c.next != nil {
		c.next.prev = c.prev
	} else {
		w.newest = c.prev
	}
	c.prev, c.next, c.listed = nil, nil, false
	w.n--
}
