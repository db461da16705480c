package memory

import (
	"context"
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

var _ store.Leaser = (*Store)(nil)

// leaseTable holds a Store's concurrency leases (see the package
// documentation, "Concurrency leases"), apart from the rate keys: its own
// shards, one per shard of the store, each allowed as many leases as that
// shard allows keys. It is made on first use.
type leaseTable struct {
	once   sync.Once
	shards []leaseShard
	ids    atomic.Uint64 // the last lease ID handed out
}

// leaseShard is one shard of a leaseTable: the keys that hash to it with
// their leases.
type leaseShard struct {
	mu   sync.Mutex
	keys map[string]*leaseKey
	n    int // leases held by keys that are not reserved
	max  int // the most leases of keys that are not reserved
	// tried is the second at which dropExpired last freed no room.
	tried int64
}

// leaseKey is one key's leases: few, so a slice searched in order.
type leaseKey struct {
	inFlight int64 // the leases' total cost
	reserved bool  // always has room: a Listed key, or an overflow key
	leases   []heldLease
}

// heldLease is one lease: its ID, its cost, and the microsecond (as
// limiter.UnixMicro) from which it no longer counts.
type heldLease struct {
	id     uint64
	cost   int64
	expiry int64
}

// leaseShards returns the lease shards, making them on first use.
func (s *Store) leaseShards() []leaseShard {
	t := &s.leases
	t.once.Do(func() {
		t.shards = make([]leaseShard, len(s.shards))
		for i := range t.shards {
			t.shards[i].keys = make(map[string]*leaseKey)
			t.shards[i].max = s.shards[i].max
		}
	})
	return t.shards
}

// isClosed reports whether Close has been called.
func (s *Store) isClosed() bool {
	select {
	case <-s.stop:
		return true
	default:
		return false
	}
}

// Acquire decides a lease of cost on key under limit at now, as
// limit.Decide does on the key's leases that have not expired at now. A
// new key that finds no room (its shard holds its share of MaxKeys leases,
// none expired) is decided on its rule's overflow key, as a rate key is
// (see the package documentation). It returns store.ErrClosed after Close,
// and the limit's error if limit.Check fails.
func (s *Store) Acquire(_ context.Context, key store.Key, limit store.Concurrency, now time.Time, cost int64) (store.LeaseDecision, error) {
	if err := limit.Check(); err != nil {
		return store.LeaseDecision{}, err
	}
	if s.isClosed() {
		return store.LeaseDecision{}, store.ErrClosed
	}
	if !limit.Reads(cost) {
		return limit.Decide(0, cost), nil
	}
	t := limiter.UnixMicro(now)
	d, held, ok := s.acquireOn(&key, limit, t, cost, 0, key.IsListed())
	if !ok {
		over := leaseOverflowKey(key.Rule(), limit)
		d, _, _ = s.acquireOn(&over, limit, t, cost, held, true)
	}
	return d, nil
}

// acquireOn decides on lk at t (µs), counting also others, slots the
// caller holds on another key (its InFlight includes them). It reports
// false, having decided nothing, when the key would need room and there
// is none; held is then the key's own slots in flight.
func (s *Store) acquireOn(lk *store.Key, limit store.Concurrency, t, cost, others int64, reserved bool) (d store.LeaseDecision, held int64, ok bool) {
	key := lk.String()
	sh := s.leaseShard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if k := sh.keys[key]; k != nil {
		sh.expire(key, k, t) // may forget the key
	}
	k := sh.keys[key]
	var inFlight int64
	if k != nil {
		inFlight = k.inFlight
	}
	d = limit.Decide(inFlight+others, cost)
	if !d.Allowed || cost == 0 {
		return d, inFlight, true
	}
	if k == nil || !k.reserved {
		if !reserved && !sh.makeRoom(t) {
			return store.LeaseDecision{}, inFlight, false
		}
		if k == nil {
			k = &leaseKey{reserved: reserved}
			sh.keys[strings.Clone(key)] = k
		}
		if !k.reserved {
			sh.n++
		}
	}
	id := s.leases.ids.Add(1)
	k.leases = append(k.leases, heldLease{id: id, cost: cost, expiry: t + int64(limit.LeaseTTL()/time.Microsecond)})
	k.inFlight += cost
	d.Lease = store.Lease{Key: *lk, ID: strconv.FormatUint(id, 10), Cost: cost, TTL: limit.LeaseTTL()}
	return d, inFlight, true
}

// Release gives lease's slots back; an expired, released or unknown lease
// (or the zero Lease) changes nothing. It returns store.ErrClosed after
// Close.
func (s *Store) Release(_ context.Context, lease store.Lease, now time.Time) error {
	if s.isClosed() {
		return store.ErrClosed
	}
	id, err := strconv.ParseUint(lease.ID, 10, 64)
	if lease.IsZero() || err != nil {
		return nil
	}
	key := lease.Key.String()
	sh := s.leaseShard(key)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if k := sh.keys[key]; k != nil {
		sh.expire(key, k, limiter.UnixMicro(now))
		if i := k.find(id); i >= 0 {
			sh.removeLease(key, k, i)
		}
	}
	return nil
}

// Renew makes each lease still held at now expire its TTL after now (never
// sooner than it would have), and reports which it found. It returns
// store.ErrClosed after Close.
func (s *Store) Renew(_ context.Context, leases []store.Lease, now time.Time) ([]bool, error) {
	if s.isClosed() {
		return nil, store.ErrClosed
	}
	t := limiter.UnixMicro(now)
	kept := make([]bool, len(leases))
	for i, l := range leases {
		id, err := strconv.ParseUint(l.ID, 10, 64)
		if l.IsZero() || err != nil {
			continue
		}
		key := l.Key.String()
		sh := s.leaseShard(key)
		sh.mu.Lock()
		if k := sh.keys[key]; k != nil {
			sh.expire(key, k, t)
			if j := k.find(id); j >= 0 {
				k.leases[j].expiry = max(k.leases[j].expiry, t+int64(l.TTL/time.Microsecond))
				kept[i] = true
			}
		}
		sh.mu.Unlock()
	}
	return kept, nil
}

// leaseShard returns the lease shard of key.
func (s *Store) leaseShard(key string) *leaseShard {
	shards := s.leaseShards()
	return &shards[maphash.String(s.seed, key)&s.mask]
}

// find returns the index of the lease with id, or -1.
func (k *leaseKey) find(id uint64) int {
	for i := range k.leases {
		if k.leases[i].id == id {
			return i
		}
	}
	return -1
}

// expire drops the leases of key (entry k) that have expired at t (µs),
// and the key once it holds none.
func (sh *leaseShard) expire(key string, k *leaseKey, t int64) {
	for i := len(k.leases) - 1; i >= 0; i-- {
		if k.leases[i].expiry <= t {
			sh.removeLease(key, k, i)
		}
	}
}

// removeLease drops lease i of key (entry k), and the key once it holds
// none.
func (sh *leaseShard) removeLease(key string, k *leaseKey, i int) {
	k.inFlight -= k.leases[i].cost
	last := len(k.leases) - 1
	k.leases[i] = k.leases[last]
	k.leases = k.leases[:last]
	if !k.reserved {
		sh.n--
	}
	if len(k.leases) == 0 {
		delete(sh.keys, key)
	}
}

// makeRoom reports whether the shard has room for one more lease of a key
// that is not reserved at t (µs), dropping every expired lease of the
// shard when it is full. A walk that frees nothing is not tried again
// within the same second, so a shard full of live leases costs a request
// no walk.
func (sh *leaseShard) makeRoom(t int64) bool {
	if sh.n < sh.max {
		return true
	}
	if sec := t / 1_000_000; sh.tried != sec {
		for key, k := range sh.keys {
			sh.expire(key, k, t)
		}
		if sh.n >= sh.max {
			sh.tried = sec
		}
	}
	return sh.n < sh.max
}

// leaseOverflowKey returns the key shared by every key of rule and limit
// that found no room for a lease: a raw key, '#', then the encoding of
// store.NewKey(rule, "concurrency", the limit's Max) (see
// appendOverflowKey).
func leaseOverflowKey(rule string, limit store.Concurrency) store.Key {
	return store.RawKey("#" + store.NewKey(rule, "concurrency", strconv.FormatInt(limit.Max, 10)).String())
}
