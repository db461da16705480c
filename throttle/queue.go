package throttle

import (
	"time"

	"github.com/sluice-rl/sluice/clock"
)

// The queue holds requests waiting for a slot: one level per priority, and
// within a level one FIFO per caller (a flow), served round-robin. It is
// guarded by the Throttle's mutex.
//
// Round-robin per caller is the fair queuing Kubernetes API Priority and
// Fairness approximates (APF serves its queues by virtual finish time, which
// for requests of equal width is round-robin). APF shuffle-shards flows onto
// a fixed number of queues because it cannot keep one queue per flow; here
// the number of flows is bounded by Queue.MaxLength (a flow exists only while
// one of its requests waits), so each caller gets its own FIFO and no two
// callers ever share one: a flooding caller cannot push another back by
// more than one request per round.

// waiter is one request waiting in the queue, blocked in its own goroutine
// on ready until the dispatcher has written d.
type waiter struct {
	prio   Priority
	client string
	since  time.Time     // when it joined the queue
	seq    uint64        // order of arrival
	ready  chan struct{} // closed once d is final
	expiry clock.Ticker  // ticks when it has waited MaxWait; nil without

	d    Decision
	f    *flow // nil once out of the queue
	prev *waiter
	next *waiter
}

// flow is one caller's FIFO within a priority.
type flow struct {
	client     string
	head, tail *waiter
	n          int
}

// level is one priority's flows, served round-robin from ring[next].
type level struct {
	flows map[string]*flow
	ring  []*flow
	next  int
	n     int
}

type queue struct {
	levels [numPriorities]level
	n      int
}

// push appends w to its caller's FIFO; a new caller joins the end of the
// round.
func (q *queue) push(w *waiter) {
	lv := &q.levels[w.prio.index()]
	f := lv.flows[w.client]
	if f == nil {
		if lv.flows == nil {
			lv.flows = make(map[string]*flow)
		}
		f = &flow{client: w.client}
		lv.flows[w.client] = f
		lv.ring = append(lv.ring, f)
	}
	w.f, w.prev, w.next = f, f.tail, nil
	if f.tail != nil {
		f.tail.next = w
	} else {
		f.head = w
	}
	f.tail = w
	f.n++
	lv.n++
	q.n++
}

// pop takes the next waiter: the highest priority that has any, the flow
// whose turn it is, the oldest of that flow.
func (q *queue) pop() *waiter {
	for i := numPriorities - 1; i >= 0; i-- {
		lv := &q.levels[i]
		if lv.n == 0 {
			continue
		}
		f := lv.ring[lv.next]
		w := f.head
		if f.n > 1 {
			lv.next = (lv.next + 1) % len(lv.ring)
		}
		q.remove(w) // drops f from the ring if it empties, keeping next on the following flow
		return w
	}
	return nil
}

// remove takes w out of the queue wherever it stands.
func (q *queue) remove(w *waiter) {
	f := w.f
	lv := &q.levels[w.prio.index()]
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		f.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		f.tail = w.prev
	}
	w.f, w.prev, w.next = nil, nil, nil
	f.n--
	lv.n--
	q.n--
	if f.n == 0 {
		lv.dropFlow(f)
	}
}

// dropFlow removes the empty flow f from the round, so that the flow after
// it is served next if it was f's turn.
func (lv *level) dropFlow(f *flow) {
	delete(lv.flows, f.client)
	for i, g := range lv.ring {
		if g != f {
			continue
		}
		lv.ring = append(lv.ring[:i], lv.ring[i+1:]...)
		if i < lv.next {
			lv.next--
		}
		if lv.next >= len(lv.ring) {
			lv.next = 0
		}
		return
	}
}

// ahead estimates how many waiters a new request of priority p from client
// would have in front of it: every waiter of a higher priority, and in its
// own priority its caller's k waiters plus at most k+1 of every other
// caller's (the rounds before its turn).
func (q *queue) ahead(p Priority, client string) int {
	n := 0
	for i := p.index() + 1; i < numPriorities; i++ {
		n += q.levels[i].n
	}
	lv := &q.levels[p.index()]
	k := 0
	if f := lv.flows[client]; f != nil {
		k = f.n
	}
	for _, f := range lv.ring {
		if f.client == client {
			n += f.n
		} else {
			n += min(f.n, k+1)
		}
	}
	return n
}

// victim picks the waiter a request of priority p from client displaces
// from a full queue: the newest waiter of the longest flow in the lowest
// priority below p; failing that, in p itself, the newest waiter of the
// longest flow if that flow is longer than the client's would become (so a
// flooding caller makes room for the others). nil if there is none.
func (q *queue) victim(p Priority, client string) *waiter {
	if v := q.lowest(); v != nil && v.prio < p {
		return v
	}
	lv := &q.levels[p.index()]
	if lv.n == 0 {
		return nil
	}
	own := 0
	if f := lv.flows[client]; f != nil {
		own = f.n
	}
	if l := lv.longest(); l.client != client && l.n > own+1 {
		return l.tail
	}
	return nil
}

// lowest returns the newest waiter of the longest flow in the lowest
// priority that has any, nil if the queue is empty.
func (q *queue) lowest() *waiter {
	for i := range q.levels {
		if q.levels[i].n > 0 {
			return q.levels[i].longest().tail
		}
	}
	return nil
}

// longest returns the level's longest flow, of equals the one with the
// newest waiter; the level must not be empty.
func (lv *level) longest() *flow {
	var l *flow
	for _, f := range lv.ring {
		if l == nil || f.n > l.n || f.n == l.n && f.tail.seq > l.tail.seq {
			l = f
		}
	}
	return l
}

// below returns every waiter of a priority lower than p, lowest first, and
// takes them out of the queue.
func (q *queue) below(p Priority) []*waiter {
	var out []*waiter
	for i := 0; i < p.index(); i++ {
		out = q.takeLevel(i, out)
	}
	return out
}

// takeLevel appends every waiter of level i to out and removes them.
func (q *queue) takeLevel(i int, out []*waiter) []*waiter {
	lv := &q.levels[i]
	for lv.n > 0 {
		w := lv.ring[0].head
		q.remove(w)
		out = append(out, w)
	}
	return out
}

// client returns every waiter of one caller and takes them out of the
// queue.
func (q *queue) client(c string) []*waiter {
	var out []*waiter
	for i := range q.levels {
		if f := q.levels[i].flows[c]; f != nil {
			for f.n > 0 {
				w := f.head
				q.remove(w)
				out = append(out, w)
			}
		}
	}
	return out
}
