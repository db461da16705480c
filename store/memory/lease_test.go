package memory

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/store"
	"github.com/sluice-rl/sluice/store/storetest"
)

// TestLeaseConformance runs the lease suite that every store passes.
func TestLeaseConformance(t *testing.T) {
	storetest.RunLeases(t, func(t *testing.T) storetest.LeaseStore {
		return New(Options{Clock: clock.NewFake(t0)})
	})
}

// leaseCounts returns the leases the store holds for keys that are not
// reserved, and for reserved keys (overflow keys among them).
func (s *Store) leaseCounts() (plain, reserved int) {
	for i := range s.leaseShards() {
		sh := &s.leases.shards[i]
		sh.mu.Lock()
		plain += sh.n
		for _, k := range sh.keys {
			if k.reserved {
				reserved += len(k.leases)
			}
		}
		sh.mu.Unlock()
	}
	return plain, reserved
}

// TestLeaseFloodLiftsNoLimit: a flood of distinct keys, each holding a
// lease it never releases, fills the store's room for leases (MaxKeys)
// and no more. The keys that find no room share their rule's overflow
// key, which admits Max in flight in all; a key that holds leases and
// finds no room counts them too; reserved keys always have room; and the
// room comes back as the leases expire.
func TestLeaseFloodLiftsNoLimit(t *testing.T) {
	const maxKeys = 64
	s := newTest(t, Options{MaxKeys: maxKeys, Shards: 1})
	vip := store.NewKey("r", "vip").Listed()
	limit := store.Concurrency{Max: 2, TTL: 10 * time.Second}
	acquire := func(key store.Key, now time.Time) store.LeaseDecision {
		t.Helper()
		d, err := s.Acquire(ctx, key, limit, now, 1)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	granted := 0
	flood := func(from, to int) {
		for i := from; i < to; i++ {
			if acquire(store.NewKey("r", strconv.Itoa(i)), t0).Allowed {
				granted++
			}
		}
	}
	flood(0, maxKeys) // fills the store
	// Key 0 holds a lease and finds no room: its next lease goes to the
	// overflow key, counting its own, so it never holds more than Max.
	if d := acquire(store.NewKey("r", "0"), t0); !d.Allowed || d.InFlight != 2 || d.Lease.Key == store.NewKey("r", "0") {
		t.Fatalf("a key with a lease that finds no room: %+v, want a lease on the overflow key, 2 in flight", d)
	}
	if d := acquire(store.NewKey("r", "0"), t0); d.Allowed || d.InFlight != 2 {
		t.Fatalf("a key at its limit, half of it on the overflow key: %+v, want denied, 2 in flight", d)
	}
	flood(maxKeys, 10*maxKeys) // the overflow key has room for one more
	if plain, reserved := s.leaseCounts(); granted != maxKeys+1 || plain != maxKeys || reserved != 2 {
		t.Fatalf("flood of %d keys: %d granted, %d leases held, %d on the overflow key; want %d, %d, 2",
			10*maxKeys, granted, plain, reserved, maxKeys+1, maxKeys)
	}
	for range 2 {
		if d := acquire(vip, t0); !d.Allowed || d.Lease.Key != vip {
			t.Fatalf("reserved key in a full store: %+v, want its own lease", d)
		}
	}
	later := t0.Add(10 * time.Second) // every lease has expired
	if d := acquire(store.NewKey("r", "new"), later); !d.Allowed || d.Lease.Key != store.NewKey("r", "new") {
		t.Fatalf("after the flood's leases expired: %+v, want a lease of its own", d)
	}
	if plain, _ := s.leaseCounts(); plain != 1 {
		t.Fatalf("%d leases held after the flood expired, want 1", plain)
	}
}

// TestLeaseOverflowRelease: a lease held on the overflow key is released
// there.
func TestLeaseOverflowRelease(t *testing.T) {
	s := newTest(t, Options{MaxKeys: 1, Shards: 1})
	limit := store.Concurrency{Max: 1, TTL: time.Minute}
	if d, _ := s.Acquire(ctx, store.NewKey("r", "a"), limit, t0, 1); !d.Allowed {
		t.Fatal(d)
	}
	d, err := s.Acquire(ctx, store.NewKey("r", "b"), limit, t0, 1)
	if err != nil || !d.Allowed || d.Lease.Key == store.NewKey("r", "b") {
		t.Fatalf("%+v, %v: want a lease on the overflow key", d, err)
	}
	if d2, _ := s.Acquire(ctx, store.NewKey("r", "c"), limit, t0, 1); d2.Allowed {
		t.Fatalf("the overflow key admitted a second lease: %+v", d2)
	}
	if err := s.Release(ctx, d.Lease, t0); err != nil {
		t.Fatal(err)
	}
	if d2, _ := s.Acquire(ctx, store.NewKey("r", "c"), limit, t0, 1); !d2.Allowed {
		t.Fatalf("after release on the overflow key: %+v", d2)
	}
}

// TestLeaseCheck: a limit no store can keep is an error naming what is
// accepted, not a decision.
func TestLeaseCheck(t *testing.T) {
	s := newTest(t, Options{})
	for _, c := range []store.Concurrency{{Max: -1}, {Max: store.MaxConcurrency + 1}, {Max: 1, TTL: time.Microsecond}, {Max: 1, TTL: 25 * time.Hour}} {
		if _, err := s.Acquire(ctx, store.RawKey("k"), c, t0, 1); err == nil || !strings.Contains(err.Error(), "want") {
			t.Errorf("%+v: %v, want an error saying what is accepted", c, err)
		}
	}
}
