package throttle

import (
	"testing"
)

// FuzzQueue drives the queue with any sequence of pushes, pops, removals
// and displacements and checks after every step that its counts agree,
// every waiter leaves once, pop serves the highest priority, and each
// caller's requests leave in the order they came.
func FuzzQueue(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	f.Add([]byte{0x10, 0x21, 0x32, 0x43, 0x10, 0x10, 0x81, 0x82, 0xc3, 0x90, 0x90})
	f.Fuzz(func(t *testing.T, ops []byte) {
		var q queue
		var in []*waiter // waiters in the queue, in order of arrival
		var seq uint64
		lastOut := map[string]uint64{} // per caller and priority, the seq that left last
		leave := func(w *waiter) {
			k := w.prio.String() + "/" + w.client
			if w.seq <= lastOut[k] {
				t.Fatalf("%s: seq %d left after %d", k, w.seq, lastOut[k])
			}
			lastOut[k] = w.seq
			for i, x := range in {
				if x == w {
					in = append(in[:i], in[i+1:]...)
					return
				}
			}
			t.Fatalf("waiter %d left twice or was never queued", w.seq)
		}
		for _, op := range ops {
			p, client := Priority(op&3)-1, string(rune('a'+op>>2&3))
			switch op >> 6 {
			case 0, 1: // push
				seq++
				w := &waiter{prio: p, client: client, seq: seq}
				q.push(w)
				in = append(in, w)
			case 2: // pop
				w := q.pop()
				if w == nil {
					if len(in) != 0 {
						t.Fatalf("pop: nothing, %d waiting", len(in))
					}
					continue
				}
				for _, x := range in {
					if x.prio > w.prio {
						t.Fatalf("pop: %v served while %v waits", w.prio, x.prio)
					}
				}
				leave(w)
			case 3: // displace for an arrival, or remove the oldest waiter (a caller leaving)
				if v := q.victim(p, client); v != nil {
					if v.prio > p {
						t.Fatalf("victim %v for an arrival of %v", v.prio, p)
					}
					if v.next != nil {
						t.Fatalf("victim %d is not the newest of its caller", v.seq)
					}
					q.remove(v)
					in = remove(t, in, v)
				} else if len(in) > 0 && op&0x20 != 0 {
					w := in[0]
					q.remove(w)
					leave(w)
				}
			}
			check(t, &q, len(in))
		}
	})
}

func remove(t *testing.T, in []*waiter, w *waiter) []*waiter {
	for i, x := range in {
		if x == w {
			return append(in[:i], in[i+1:]...)
		}
	}
	t.Fatalf("waiter %d not queued", w.seq)
	return nil
}

// check verifies the queue's counts, flows and ring against each other.
func check(t *testing.T, q *queue, want int) {
	total := 0
	for i := range q.levels {
		lv := &q.levels[i]
		n := 0
		if len(lv.ring) != len(lv.flows) || len(lv.ring) > 0 && lv.next >= len(lv.ring) {
			t.Fatalf("level %d: ring %d, flows %d, next %d", i, len(lv.ring), len(lv.flows), lv.next)
		}
		for _, f := range lv.ring {
			c := 0
			for w := f.head; w != nil; w = w.next {
				if w.f != f || w.prio.index() != i {
					t.Fatalf("level %d: waiter %d in the wrong flow", i, w.seq)
				}
				c++
			}
			if c != f.n || f.n == 0 || lv.flows[f.client] != f {
				t.Fatalf("level %d flow %q: %d linked, n %d", i, f.client, c, f.n)
			}
			n += c
		}
		if n != lv.n {
			t.Fatalf("level %d: %d linked, n %d", i, n, lv.n)
		}
		total += n
	}
	if total != q.n || q.n != want {
		t.Fatalf("queue: %d linked, n %d, want %d", total, q.n, want)
	}
}
