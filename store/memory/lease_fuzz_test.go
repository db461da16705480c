package memory

import (
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/store"
)

// leaseModel is the plainest bookkeeping of one key's leases: every lease
// granted, with its cost and expiry, until released.
type leaseModel struct {
	leases map[int]struct {
		cost   int64
		expiry time.Time
	}
}

// expire forgets the leases that have expired at now, as every operation
// on the key does: a clock that goes back later brings none back.
func (m *leaseModel) expire(now time.Time) {
	for i, l := range m.leases {
		if !now.Before(l.expiry) {
			delete(m.leases, i)
		}
	}
}

// inFlight returns the cost of the leases held.
func (m *leaseModel) inFlight() int64 {
	var n int64
	for _, l := range m.leases {
		n += l.cost
	}
	return n
}

// FuzzLeases runs operations decoded from the input on one key of a memory
// store and checks every answer against leaseModel: an acquire is allowed
// exactly when its cost fits beside what the model holds, and reports the
// model's count; a renewal keeps exactly the leases that still count; and
// the store never holds more than the limit.
func FuzzLeases(f *testing.F) {
	f.Add([]byte{0, 1, 0, 2, 1, 0, 2, 0, 0, 1})
	f.Add([]byte{0, 3, 3, 9, 2, 1, 0, 3, 4, 200, 0, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		s := New(Options{Clock: clock.NewFake(t0)})
		defer s.Close()
		const max = 4
		limit := store.Concurrency{Max: max, TTL: 10 * time.Second}
		m := leaseModel{leases: map[int]struct {
			cost   int64
			expiry time.Time
		}{}}
		var leases []store.Lease
		now := t0
		for i := 0; i+1 < len(ops); i += 2 {
			op, arg := ops[i]%4, int(ops[i+1])
			var lease store.Lease // the lease released or renewed
			if len(leases) > 0 {
				lease = leases[arg%len(leases)]
			}
			if op == 0 || (op == 1 || op == 2) && !lease.IsZero() {
				m.expire(now) // the operation reads the key
			}
			switch op {
			case 0: // acquire
				cost := int64(arg % 6)
				d, err := s.Acquire(ctx, store.RawKey("k"), limit, now, cost)
				want := m.inFlight()
				if err != nil || d.Allowed != (want+cost <= max) {
					t.Fatalf("op %d: acquire of %d with %d in flight: %+v, %v", i, cost, want, d, err)
				}
				if d.Allowed {
					want += cost
				}
				if d.InFlight != want || d.InFlight > max {
					t.Fatalf("op %d: %d in flight, want %d (limit %d)", i, d.InFlight, want, max)
				}
				if !d.Lease.IsZero() {
					m.leases[len(leases)] = struct {
						cost   int64
						expiry time.Time
					}{cost, now.Add(limit.TTL)}
				}
				leases = append(leases, d.Lease)
			case 1: // release
				if len(leases) > 0 {
					j := arg % len(leases)
					_ = s.Release(ctx, leases[j], now)
					delete(m.leases, j)
				}
			case 2: // renew
				if len(leases) > 0 {
					j := arg % len(leases)
					kept, err := s.Renew(ctx, []store.Lease{leases[j]}, now)
					l, held := m.leases[j]
					if err != nil || kept[0] != held {
						t.Fatalf("op %d: renew of lease %d: %v, %v; want %v", i, j, kept, err, held)
					}
					if held {
						l.expiry = maxTime(l.expiry, now.Add(limit.TTL))
						m.leases[j] = l
					}
				}
			case 3: // time moves: up to 12.7s on, or back when arg is odd
				d := time.Duration(arg/2) * 100 * time.Millisecond
				if arg%2 == 1 {
					d = -d
				}
				now = now.Add(d)
			}
		}
	})
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
