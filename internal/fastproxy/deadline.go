package fastproxy

import (
	"net"
	"time"
)

// A Deadline gives each read (or each write) on a connection Wait to
// complete, as setting the deadline to now+Wait before every call does,
// while moving the runtime's timer once per Wait/8 rather than on every
// call: on the fast path that was two to three timer updates, each under a
// lock, per request. A call that finds the deadline set less than Wait/8
// ago leaves it (it is at least 7/8 of Wait away); should it fire before
// the call has had Wait, the deadline is moved to the call's start plus
// Wait and the call goes on, so no call is ever given up early.
//
// The zero Deadline with Wait set is ready; one Deadline serves one
// direction of one connection, which net.Conn's users never call
// concurrently.
type Deadline struct {
	Wait  time.Duration
	armed time.Time // the deadline was last set to armed+Wait
}

// arm sets the deadline, through set, to now+Wait unless it was set less
// than Wait/8 ago.
func (d *Deadline) arm(now time.Time, set func(net.Conn, time.Time) error, c net.Conn) {
	if d.armed.IsZero() || now.Sub(d.armed) >= d.Wait/8 {
		d.armed = now
		_ = set(c, now.Add(d.Wait))
	}
}

// early reports whether a timeout of a call started at start came before
// the call had Wait, and if so moves the deadline to start+Wait.
func (d *Deadline) early(err error, start time.Time, set func(net.Conn, time.Time) error, c net.Conn) bool {
	if err == nil || !isTimeout(err) || time.Since(start) >= d.Wait || d.armed.Equal(start) {
		return false
	}
	d.armed = start
	_ = set(c, start.Add(d.Wait))
	return true
}

// Read reads from c into p, giving up once the read has waited Wait.
func (d *Deadline) Read(c net.Conn, p []byte) (int, error) {
	start := time.Now()
	d.arm(start, net.Conn.SetReadDeadline, c)
	for {
		n, err := c.Read(p)
		if n > 0 || !d.early(err, start, net.Conn.SetReadDeadline, c) {
			return n, err
		}
	}
}

// Write writes p to c, giving up once the write has waited Wait.
func (d *Deadline) Write(c net.Conn, p []byte) (int, error) {
	start := time.Now()
	d.arm(start, net.Conn.SetWriteDeadline, c)
	n, err := c.Write(p)
	for n < len(p) && d.early(err, start, net.Conn.SetWriteDeadline, c) {
		var m int
		m, err = c.Write(p[n:])
		n += m
	}
	return n, err
}
