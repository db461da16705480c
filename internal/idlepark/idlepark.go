// Package idlepark keeps idle keep-alive connections without a goroutine
// or a buffer each: a parked connection is a file descriptor in an epoll
// set, and costs its socket and under a hundred bytes of Go structures
// (its net.Conn is closed, a duplicate of its descriptor kept). When bytes
// arrive on it, it is handed back (Options.Wake) over a new net.Conn to be
// served again; when it has been parked for the idle time Park was given,
// or its caller closed it with nothing sent before, it is closed.
//
// A server parks a connection that has been idle for a while (the gateway:
// 10 ms without a request after its first answer, 250 ms after a later
// one), so that a busy keep-alive connection seldom pays for parking and
// waking, and ten thousand idle ones cost about what they cost nginx.
// Only on Linux: elsewhere New returns ErrUnsupported and connections
// wait in their goroutines as before.
package idlepark

import (
	"errors"
	"net"
	"syscall"
)

// ErrUnsupported is New's error where there is no epoll.
var ErrUnsupported = errors.New("idlepark: parking connections needs Linux's epoll")

// ErrClosed is Park's error once the Parker is closed.
var ErrClosed = errors.New("idlepark: closed")

// Options configure a Parker.
type Options struct {
	// Wake serves a connection again once bytes arrived (or an error, or
	// its end after bytes; an end alone closes it): c is a new net.Conn
	// over the parked socket, and closed what Park was given with it, now
	// the caller's to call once it closes c; state is Park's too (such as
	// the TLS connection over the socket). It is called on the Parker's
	// goroutine and must not block: start a goroutine for the connection.
	Wake func(c net.Conn, closed func(), state any)
	// Expire, if set, closes a connection parked with a state when it
	// expires or the Parker closes, as Wake would serve it (c a new
	// net.Conn over its socket, closed and state Park's), so that it can
	// say goodbye first (a TLS close_notify); without it, or without a
	// state, the socket is closed at once. It must not block nor call the
	// Parker.
	Expire func(c net.Conn, closed func(), state any)
	// Ended, if set, is called for each connection the Parker closes (its
	// caller's end, its idle time, or the Parker's Close; through Expire
	// too), on the Parker's goroutine or in Close: it must not block nor
	// call the Parker.
	Ended func()
}

// Conn is what a Parker can park: a connection with a file descriptor.
type Conn interface {
	net.Conn
	syscall.Conn
}
