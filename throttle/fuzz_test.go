package throttle

import "testing"

// FuzzQueue drives the queue with any sequence of pushes, pops, removals
// and displacements and checks after every step that its counts agree,
// every waiter leaves once, pop serves the highest priority, a displaced
// waiter is the newest of its caller and of no higher priority than the
// arrival, and each caller's requests leave in the order they came.
//
// Each byte is one step: bits 0-1 a priority, bits 2-3 a caller, bits 6-7
// the operation (0, 1 push; 2 pop; 3 displace for an arrival, or with bit 5
// set and no victim, the oldest waiter leaves).
func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{0x10, 0x21, 0x32, 0x43, 0x10, 0x10, 0x81, 0x82, 0xc3, 0x90, 0x90})
	f.Fuzz(func(t *testing.T, ops []byte) {
		m := &queueModel{t: t, lastOut: map[string]uint64{}}
		for _, op := range ops {
			p, client := Priority(op&3)-1, string(rune('a'+op>>2&3))
			switch op >> 6 {
			case 0, 1:
				m.push(p, client)
			case 2:
				m.pop()
			case 3:
				if !m.displace(p, client) && op&0x20 != 0 && len(m.in) > 0 {
					w := m.in[0]
					m.q.remove(w)
					m.leave(w)
				}
			}
			m.check()
		}
	})
}

// queueModel is a queue and what should be in it.
type queueModel struct {
	t       *testing.T
	q       queue
	in      []*waiter // waiters in the queue, in order of arrival
	seq     uint64
	lastOut map[string]uint64 // per priority and caller, the seq that left last
}

func (m *queueModel) push(p Priority, client string) {
	m.seq++
	w := &waiter{prio: p, client: client, seq: m.seq}
	m.q.push(w)
	m.in = append(m.in, w)
}

func (m *queueModel) pop() {
	w := m.q.pop()
	if w == nil {
		if len(m.in) != 0 {
			m.t.Fatalf("pop: nothing, %d waiting", len(m.in))
		}
		return
	}
	for _, x := range m.in {
		if x.prio > w.prio {
			m.t.Fatalf("pop: %v served while %v waits", w.prio, x.prio)
		}
	}
	m.leave(w)
}

// displace removes the victim for an arrival of p from client, if any.
func (m *queueModel) displace(p Priority, client string) bool {
	v := m.q.victim(p, client)
	if v == nil {
		return false
	}
	if v.prio > p || v.next != nil {
		m.t.Fatalf("victim %d (%v) for an arrival of %v: not lower or not the newest of its caller", v.seq, v.prio, p)
	}
	m.q.remove(v)
	m.drop(v)
	return true
}

// leave records that w left from the front of its caller's FIFO.
func (m *queueModel) leave(w *waiter) {
	k := w.prio.String() + "/" + w.client
	if w.seq <= m.lastOut[k] {
		m.t.Fatalf("%s: seq %d left after %d", k, w.seq, m.lastOut[k])
	}
	m.lastOut[k] = w.seq
	m.drop(w)
}

func (m *queueModel) drop(w *waiter) {
	for i, x := range m.in {
		if x == w {
			m.in = append(m.in[:i], m.in[i+1:]...)
			return
		}
	}
	m.t.Fatalf("waiter %d left twice or was never queued", w.seq)
}

// check verifies the queue's counts, flows and ring against each other and
// the model.
func (m *queueModel) check() {
	total := 0
	for i := range m.q.levels {
		lv := &m.q.levels[i]
		if len(lv.ring) != len(lv.flows) || len(lv.ring) > 0 && lv.next >= len(lv.ring) {
			m.t.Fatalf("level %d: ring %d, flows %d, next %d", i, len(lv.ring), len(lv.flows), lv.next)
		}
		n := 0
		for _, f := range lv.ring {
			c := 0
			for w := f.head; w != nil; w = w.next {
				if w.f != f || w.prio.index() != i {
					m.t.Fatalf("level %d: waiter %d in the wrong flow", i, w.seq)
				}
				c++
			}
			if c != f.n || f.n == 0 || lv.flows[f.client] != f {
				m.t.Fatalf("level %d flow %q: %d linked, n %d", i, f.client, c, f.n)
			}
			n += c
		}
		if n != lv.n {
			m.t.Fatalf("level %d: %d linked, n %d", i, n, lv.n)
		}
		total += n
	}
	if total != m.q.n || m.q.n != len(m.in) {
		m.t.Fatalf("queue: %d linked, n %d, want %d", total, m.q.n, len(m.in))
	}
}
