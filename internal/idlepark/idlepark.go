// Package idlepark keeps idle keep-alive connections without a goroutine
// or a buffer each: a parked connection is a file descriptor in an epoll
// set, and costs its socket and a few hundred bytes of Go structures. When
// bytes arrive on it, it is handed back (Options.Wake) to be served again;
// when it has been parked for Options.Idle, it is closed.
//
// A server parks a connection that has been idle for a while (the gateway:
// a second without a request), so that a busy keep-alive connection never
// pays for parking and waking, and ten thousand idle ones cost about what
// they cost nginx. Only on Linux: elsewhere New returns ErrUnsupported and
// connections wait in their goroutines as before.
package idlepark

import (
	"errors"
	"net"
	"syscall"
	"time"
)

// ErrUnsupported is New's error where there is no epoll.
var ErrUnsupported = errors.New("idlepark: parking connections needs Linux's epoll")

// ErrClosed is Park's error once the Parker is closed.
var ErrClosed = errors.New("idlepark: closed")

// Options configure a Parker.
type Options struct {
	// Idle is how long a connection stays parked without a byte arriving
	// before it is closed: the server's idle timeout less the time it was
	// idle before it was parked. 0: for ever.
	Idle time.Duration
	// Wake serves a connection again once bytes (or its end) arrived. It
	// is called on the Parker's goroutine and must not block: start a
	// goroutine for the connection.
	Wake func(net.Conn)
}

// Conn is what a Parker can park: a connection with a file descriptor.
type Conn interface {
	net.Conn
	syscall.Conn
}
