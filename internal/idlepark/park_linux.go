package idlepark

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// Parker holds parked connections in one epoll set, watched by one
// goroutine.
type Parker struct {
	opts   Options
	epfd   int
	wakeFD int // an eventfd: Close wakes the loop with it

	mu     sync.Mutex
	byFD   map[int32]*parked
	queues []*queue // one for each idle time parked with: a few at most
	closed bool
	done   chan struct{}
}

// queue lists the connections parked with one idle time, oldest first:
// they expire in this order.
type queue struct {
	idle           time.Duration
	oldest, newest *parked
}

// parked is one parked connection: its socket's descriptor alone (a
// duplicate of its net.Conn's, closed), what to call once it is closed,
// and its place in the list.
type parked struct {
	fd         int32
	until      int64  // closed then (UnixNano) if nothing arrived; 0: never
	closed     func() // Park's; nil: none
	state      any    // Park's, for Wake
	q          *queue // the list it is in
	prev, next *parked
}

// end closes pc, expired or parked when the Parker closed: through
// Options.Expire if it has a state and there is one, else at once.
func (p *Parker) end(pc *parked) {
	p.ended()
	if pc.state == nil || p.opts.Expire == nil {
		pc.shut()
		return
	}
	if c, ok := pc.reopen(); ok {
		p.opts.Expire(c, pc.closed, pc.state)
	}
}

// reopen makes a net.Conn of pc's socket, taking its descriptor; false if
// it cannot (out of descriptors), the socket closed then and closed called.
func (pc *parked) reopen() (net.Conn, bool) {
	f := os.NewFile(uintptr(pc.fd), "")
	c, err := net.FileConn(f) // its own duplicate
	_ = f.Close()
	if err != nil {
		if pc.closed != nil {
			pc.closed()
		}
		return nil, false
	}
	return c, true
}

// ended tells Options.Ended of a connection closed.
func (p *Parker) ended() {
	if p.opts.Ended != nil {
		p.opts.Ended()
	}
}

// shut closes pc's socket for good. p.mu need not be held.
func (pc *parked) shut() {
	_ = unix.Close(int(pc.fd))
	if pc.closed != nil {
		pc.closed()
	}
}

// New starts a Parker.
func New(opts Options) (*Parker, error) {
	if opts.Wake == nil {
		return nil, errors.New("idlepark: Options.Wake is nil")
	}
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("idlepark: epoll_create1: %w", err)
	}
	wakeFD, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("idlepark: eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(wakeFD)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, wakeFD, &ev); err != nil {
		_ = unix.Close(wakeFD)
		_ = unix.Close(epfd)
		return nil, fmt.Errorf("idlepark: epoll_ctl: %w", err)
	}
	p := &Parker{opts: opts, epfd: epfd, wakeFD: wakeFD, byFD: make(map[int32]*parked), done: make(chan struct{})}
	go p.loop()
	return p, nil
}

// Park takes c until bytes arrive on it (then Wake gets it), its caller
// closes it having sent nothing (then it is closed), idle passes (closed
// too; 0: never) or the Parker closes (closed too). idle is the server's
// idle timeout less the time c was idle before it was parked; a server
// parks with a few idle times, not one per connection (each has its own
// list while it holds connections, scanned on every Park). state is
// handed to Wake with the connection, and let go when it is closed. c
// must have no bytes buffered above its socket and nobody reading or
// writing it. Park keeps a duplicate of c's descriptor and closes c, so
// that its net.Conn, its addresses and its entry in Go's poller are
// garbage while it is parked; Wake gets a new net.Conn over the same
// socket. closed (nil: none) is called once the parker closes the socket
// (ended, expired, the Parker closed, or an error here), never when it is
// woken or handed to Expire: they get it. c is the Parker's even on an
// error (closed then, and closed called).
func (p *Parker) Park(c Conn, idle time.Duration, closed func(), state any) error {
	fd, err := dupFD(c)
	_ = c.Close() // the duplicate keeps the socket open
	if err != nil {
		if closed != nil {
			closed()
		}
		return err
	}
	pc := &parked{fd: int32(fd), closed: closed, state: state}
	if idle > 0 {
		pc.until = time.Now().Add(idle).UnixNano()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		pc.shut()
		return ErrClosed
	}
	// One-shot: once it fires the descriptor stays in the set but fires no
	// more, until it is taken out (wake) or re-armed.
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT, Fd: pc.fd}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		pc.shut()
		return fmt.Errorf("idlepark: epoll_ctl add: %w", err)
	}
	p.byFD[pc.fd] = pc
	p.append(pc, max(idle, 0))
	if pc.q.oldest == pc {
		p.poke() // the loop may wait longer than this one's expiry
	}
	return nil
}

// dupFD duplicates c's descriptor (close-on-exec; non-blocking as c's is:
// they share the open file).
func dupFD(c Conn) (int, error) {
	rc, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, derr := -1, error(nil)
	if err := rc.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, fmt.Errorf("idlepark: dup: %w", derr)
	}
	return fd, nil
}

// unread is how many bytes wait to be read on fd (-1 if unknown).
func unread(fd int32) int {
	n, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ)
	if err != nil {
		return -1
	}
	return n
}

// Parked is the number of connections parked now.
func (p *Parker) Parked() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.byFD)
}

// Close closes every parked connection, parks no more and stops the
// Parker's goroutine, waiting for it.
func (p *Parker) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.done
		return nil
	}
	p.closed = true
	for _, q := range p.queues {
		for pc := q.oldest; pc != nil; pc = q.oldest {
			p.unwatch(pc)
			p.end(pc)
		}
	}
	p.poke()
	p.mu.Unlock()
	<-p.done
	_ = unix.Close(p.wakeFD)
	return unix.Close(p.epfd)
}

// poke wakes the loop. p.mu is held.
func (p *Parker) poke() {
	var one = [8]byte{1}
	_, _ = unix.Write(p.wakeFD, one[:])
}

func (p *Parker) loop() {
	defer close(p.done)
	events := make([]unix.EpollEvent, 128)
	var woken []*parked
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return
		}
		// Empty lists go, so that idle times parked with once do not pile up.
		p.queues = slices.DeleteFunc(p.queues, func(q *queue) bool { return q.oldest == nil })
		wait := -1 // no expiry to wait for: until an event
		if until := p.nextExpiry(); until != 0 {
			wait = int(min((until-time.Now().UnixNano())/1e6+1, 60_000))
			wait = max(wait, 0)
		}
		p.mu.Unlock()
		n, err := unix.EpollWait(p.epfd, events, wait)
		if err != nil && !errors.Is(err, unix.EINTR) {
			n = 0
			time.Sleep(10 * time.Millisecond) // cannot happen on a valid set; do not spin
		}
		p.mu.Lock()
		woken = woken[:0]
		for _, ev := range events[:max(n, 0)] {
			if int(ev.Fd) == p.wakeFD {
				var buf [8]byte
				_, _ = unix.Read(p.wakeFD, buf[:])
				continue
			}
			pc := p.byFD[ev.Fd]
			if pc == nil {
				continue
			}
			p.unwatch(pc)
			if ev.Events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 && unread(pc.fd) == 0 {
				// Its end and nothing before it: closed here, as the
				// server would once it read the end, without a
				// net.Conn and a goroutine for each of a crowd of
				// callers leaving at once.
				pc.shut()
				p.ended()
				continue
			}
			woken = append(woken, pc)
		}
		now := time.Now().UnixNano()
		for _, q := range p.queues {
			for pc := q.oldest; pc != nil && pc.until != 0 && now >= pc.until; pc = q.oldest {
				p.unwatch(pc)
				p.end(pc)
			}
		}
		closed := p.closed
		p.mu.Unlock()
		for i, pc := range woken {
			woken[i] = nil
			if closed {
				p.end(pc)
				continue
			}
			c, ok := pc.reopen()
			if !ok { // out of descriptors: as if it expired
				p.ended()
				continue
			}
			p.opts.Wake(c, pc.closed, pc.state)
		}
	}
}

// nextExpiry is when the first parked connection expires (UnixNano), 0:
// none does. p.mu is held.
func (p *Parker) nextExpiry() int64 {
	var until int64
	for _, q := range p.queues {
		if pc := q.oldest; pc != nil && pc.until != 0 && (until == 0 || pc.until < until) {
			until = pc.until
		}
	}
	return until
}

// unwatch takes pc out of the set, the map and its list. p.mu is held.
func (p *Parker) unwatch(pc *parked) {
	_ = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, int(pc.fd), nil)
	delete(p.byFD, pc.fd)
	q := pc.q
	if pc.prev != nil {
		pc.prev.next = pc.next
	} else {
		q.oldest = pc.next
	}
	if pc.next != nil {
		pc.next.prev = pc.prev
	} else {
		q.newest = pc.prev
	}
	pc.prev, pc.next, pc.q = nil, nil, nil
}

// append puts pc at the end of idle's list: parked later with the same
// idle time, it expires later. p.mu is held.
func (p *Parker) append(pc *parked, idle time.Duration) {
	var q *queue
	for _, each := range p.queues {
		if each.idle == idle {
			q = each
			break
		}
	}
	if q == nil {
		q = &queue{idle: idle}
		p.queues = append(p.queues, q)
	}
	pc.q, pc.prev = q, q.newest
	if q.newest != nil {
		q.newest.next = pc
	} else {
		q.oldest = pc
	}
	q.newest = pc
}
