package memory

import (
	"context"
	"hash/maphash"
	"math/bits"
	"runtime"
	"sync"
	"time"

	"github.com/sluice-rl/sluice/clock"
	"github.com/sluice-rl/sluice/limiter"
	"github.com/sluice-rl/sluice/store"
)

// Defaults of Options.
const (
	DefaultMaxKeys       = 1_000_000
	DefaultMaxLogEntries = 10_000_000
	// DefaultMaxGuestKeys and DefaultMaxGuestLogEntries bound the guests'
	// room (Options.Guest).
	DefaultMaxGuestKeys       = 100_000
	DefaultMaxGuestLogEntries = 1_000_000
	DefaultSweepInterval      = 10 * time.Second
	minDefaultShards          = 64
	maxShards                 = 1 << 16
	maxShardKeys              = 1 << 31 // entry.limit indexes at most as many limits as keys in 32 bits
)

// Options configures a Store. The zero Options is valid: every field has a
// default.
type Options struct {
	// MaxKeys is the most keys the store holds, split evenly over the
	// shards, not counting the Listed keys (store.Key.IsListed), the overflow counters
	// and the guests (see the package documentation). Zero or less means
	// DefaultMaxKeys (1,000,000).
	MaxKeys int

	// MaxLogEntries is the most sliding_log entries the store holds,
	// counted across its keys: one per request admitted within the period
	// of a sliding_log limit, 16 bytes each. Zero or less means
	// DefaultMaxLogEntries (10,000,000: 160 MB of entries). A key that is
	// not reserved and would need an entry beyond it is decided on its
	// overflow counter, like a key that finds no room; reserved keys and
	// overflow counters always have room, so their logs (at most the rate
	// each) can take the store past MaxLogEntries.
	MaxLogEntries int

	// Shards is the number of independently locked parts of the store,
	// rounded up to a power of two. Zero or less means the smallest power
	// of two at least 4 x GOMAXPROCS, and at least 64. It is at most
	// 65536, and lowered when MaxKeys is smaller so that every shard can
	// hold a key.
	Shards int

	// Clock drives the background sweep of expired keys. It is not used
	// for decisions: those take the time as an argument, which should come
	// from the same clock. Nil means clock.Real{}.
	Clock clock.Clock

	// SweepInterval is how often expired keys are removed. Zero or less
	// means DefaultSweepInterval (10s).
	SweepInterval time.Duration

	// Guest, if set, names the keys that have a room of their own, apart
	// from MaxKeys: keys that callers make as they like (package rls's
	// counters, whose values and even limits an Envoy caller picks), so
	// that however many of them arrive they take no room from the other
	// keys, nor those from them. The guests' room holds at most
	// MaxGuestKeys keys and MaxGuestLogEntries sliding_log entries; when
	// it is full its least recently used keys are evicted, those not
	// being limited first, then those being limited: a guest may have its
	// count forgotten under a flood of guests, and is never refused for
	// want of room. It is called with the key's shard locked, for each
	// decision on a key the store does not hold, so it must be quick; a
	// Listed key is never a guest; nil: no key is a guest.
	Guest func(key store.Key) bool

	// MaxGuestKeys is the most guests the store holds, split evenly over
	// the shards and at least one in each. Zero or less means
	// DefaultMaxGuestKeys (100,000).
	MaxGuestKeys int

	// MaxGuestLogEntries is the most sliding_log entries of guests the
	// store holds, apart from MaxLogEntries. Zero or less means
	// DefaultMaxGuestLogEntries (1,000,000: 16 MB of entries).
	MaxGuestLogEntries int
}

// Store is the in-memory store: a fixed number of shards, each a mutex and
// a hash table from key to state. It is safe for concurrent use. See the
// package documentation for its bounds and eviction order.
type Store struct {
	seed      maphash.Seed
	mask      uint64 // len(shards) - 1
	shards    []shard
	guest     func(store.Key) bool // Options.Guest
	bound     logBound
	guestLogs logBound   // the guests' (Options.MaxGuestLogEntries)
	leases    leaseTable // concurrency leases (lease.go)
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

var _ store.Store = (*Store)(nil)

// New returns a store configured by opts and starts its sweeper; Close
// stops it.
func New(opts Options) *Store {
	return newStore(opts, nil)
}

// newStore is New with a hook that the sweeper calls after each sweep (for
// tests; nil for none).
func newStore(opts Options, afterSweep func()) *Store {
	opts = opts.withDefaults()
	s := &Store{
		seed:  maphash.MakeSeed(),
		guest: opts.Guest,
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
	}
	s.shards = make([]shard, opts.Shards)
	s.bound.max = int64(opts.MaxLogEntries)
	s.guestLogs.max = int64(opts.MaxGuestLogEntries)
	s.mask = uint64(opts.Shards - 1)
	for i := range s.shards {
		sh := &s.shards[i]
		sh.max = shareOf(opts.MaxKeys, opts.Shards, i)
		sh.guestMax = max(shareOf(opts.MaxGuestKeys, opts.Shards, i), 1)
		sh.bound, sh.guestBound = &s.bound, &s.guestLogs
	}
	ticker := opts.Clock.NewTicker(opts.SweepInterval)
	go s.sweepLoop(ticker, afterSweep)
	return s
}

// shareOf returns shard i's share of n keys split evenly over shards.
func shareOf(n, shards, i int) int {
	per := n / shards
	if i < n%shards {
		per++
	}
	return min(per, maxShardKeys)
}

// withDefaults returns o with its defaults filled in and Shards a power of
// two no larger than MaxKeys.
func (o Options) withDefaults() Options {
	if o.MaxKeys <= 0 {
		o.MaxKeys = DefaultMaxKeys
	}
	if o.MaxLogEntries <= 0 {
		o.MaxLogEntries = DefaultMaxLogEntries
	}
	if o.MaxGuestKeys <= 0 {
		o.MaxGuestKeys = DefaultMaxGuestKeys
	}
	if o.MaxGuestLogEntries <= 0 {
		o.MaxGuestLogEntries = DefaultMaxGuestLogEntries
	}
	if o.Shards <= 0 {
		o.Shards = max(minDefaultShards, 4*runtime.GOMAXPROCS(0))
	}
	o.Shards = 1 << bits.Len(uint(min(o.Shards, maxShards)-1)) // a power of two, rounded up
	for o.Shards > o.MaxKeys {
		o.Shards /= 2
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.SweepInterval <= 0 {
		o.SweepInterval = DefaultSweepInterval
	}
	return o
}

// Decide applies a request of cost to key under limit at now, atomically
// for that key: it locks the key's shard, runs the limit on the key's
// state and stores the new state. A key the store does not hold starts
// fresh. A new key that finds no room (its shard is full and every key in
// it is being limited) is decided on its overflow counter, shared by
// every key of its rule and limit that found no room: the store never
// answers that it is full. A state written under another limit is first
// reinterpreted under this one (limiter.Reinterpret). It returns
// store.ErrClosed after Close. The context is not consulted: a decision
// does no I/O and waits only for the shard's lock.
func (s *Store) Decide(_ context.Context, key store.Key, limit limiter.Limit, now time.Time, cost int64) (d limiter.Decision, err error) {
	_, err = s.decide(key, &limit, now, cost, &d)
	return d, err
}

// decide is Decide writing the decision to *d, which it overwrites, and
// reporting whether it was made on an overflow counter (store.Result's
// Shared): Decide and DecideEach share it, the batch passing its
// requests' limits and its results' decisions where they are instead of
// copying each (72 bytes) in and out. k comes by value: a Key whose
// address Decide took would make the compiler copy the limit twice on
// its way in, and the second copy's overlapping moves stall the loads
// that follow (a fifth of a hot key's decision, bench/core).
func (s *Store) decide(k store.Key, l *limiter.Limit, now time.Time, cost int64, d *limiter.Decision) (shared bool, err error) {
	key := k.String()
	h := maphash.String(s.seed, key)
	t := limiter.UnixMicro(now) // read once, for the decision and the expiry, before the lock
	sh := &s.shards[h&s.mask]
	sh.mu.Lock()
	// The common case, written out here: a key the shard holds under this
	// limit, with no sliding_log to look up. The rest is decideSlow's;
	// kept out of here, it leaves this function a small frame.
	if i := sh.tab.find(h, key); i >= 0 {
		e := sh.tab.at(i)
		if w := sh.limits.slot(e.limit); !w.log && l.Same(&w.limit) { // a log's find is cheap next to its decision
			st := limiter.State{A: e.a, B: e.b}
			l.ApplyMicros(&st, t, cost, d)
			sh.record(e, d.Allowed && d.Remaining > 0, expiryMicros(t, d.Reset), st.A, st.B)
			sh.mu.Unlock()
			return false, nil
		}
	}
	return s.decideSlow(sh, h, &k, l, now, cost, d)
}

// decideSlow is decide past the common case, sh (the shard of k, whose
// encoding's hash is h) locked: it unlocks it.
func (s *Store) decideSlow(sh *shard, h uint64, k *store.Key, l *limiter.Limit, now time.Time, cost int64, d *limiter.Decision) (shared bool, err error) {
	*d, err = s.decideLocked(sh, h, k, l, now, cost)
	sh.mu.Unlock()
	if err == errNoRoom {
		*d, err = s.decideOverflow(k.Rule(), *l, now, cost)
		return err == nil, err
	}
	return false, err
}

// decideLocked is Decide with sh, the shard of k (whose encoding's hash
// is h), locked: for a closed store, a key the shard does not hold, a
// sliding_log or a state written under another limit.
func (s *Store) decideLocked(sh *shard, h uint64, k *store.Key, l *limiter.Limit, now time.Time, cost int64) (limiter.Decision, error) {
	key := k.String()
	if sh.closed {
		return limiter.Decision{}, store.ErrClosed
	}
	log := l.Algorithm() == limiter.SlidingLog
	if log {
		if class := s.classOf(k); class != reservedBit && !sh.boundOf(class).fits(1) {
			sh.makeLogRoom(now, class) // before find: it may evict this key
		}
	}
	i := sh.tab.find(h, key)
	if i < 0 {
		return sh.decideNew(h, key, *l, now, cost, s.classOf(k))
	}
	e := sh.tab.at(i)
	if !l.Same(sh.limits.at(e.limit)) {
		sh.reinterpret(e, *l, now)
	}
	if log {
		return sh.decideLog(e, *l, now, cost)
	}
	return sh.apply(e, l, now, cost), nil
}

// classOf returns the class of a key the store does not hold: reservedBit
// for a Listed key, guestBit for one Options.Guest names, 0 for a key of
// the main room.
func (s *Store) classOf(k *store.Key) uint32 {
	switch {
	case k.IsListed():
		return reservedBit
	case s.guest != nil && s.guest(*k):
		return guestBit
	}
	return 0
}

// DecideEach decides each request in order, as Decide does, appending
// the results to dst: it allocates nothing when dst has room. After Close
// it returns dst as given and store.ErrClosed.
func (s *Store) DecideEach(_ context.Context, dst []store.Result, reqs []store.Request, now time.Time) ([]store.Result, error) {
	n := len(dst)
	for i := range reqs {
		r := &reqs[i]
		dst = append(dst, store.Result{})
		res := &dst[len(dst)-1]
		shared, err := s.decide(r.Key, &r.Limit, now, r.Cost, &res.Decision)
		switch {
		case err == store.ErrClosed:
			return dst[:n], err
		case err != nil:
			res.Err = err
		}
		res.Shared = shared
	}
	return dst, nil
}

// Len returns the number of keys the store holds.
func (s *Store) Len() int {
	n := 0
	for i := range s.shards {
		sh := &s.shards[i]
		sh.mu.Lock()
		n += sh.tab.n
		sh.mu.Unlock()
	}
	return n
}

// Close stops the sweeper, waits for it and forgets every key; later
// decisions return store.ErrClosed. Close is idempotent and returns nil.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		<-s.done
		for i := range s.shards {
			sh := &s.shards[i]
			sh.mu.Lock()
			sh.closed = true
			sh.tab.reset()
			sh.limits.reset()
			sh.logs = nil
			sh.mu.Unlock()
		}
		s.bound.used.Store(0)
		s.guestLogs.used.Store(0)
	})
	return nil
}

// sweepLoop removes expired keys at every tick until Close.
func (s *Store) sweepLoop(ticker clock.Ticker, afterSweep func()) {
	defer close(s.done)
	defer ticker.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-ticker.C():
			sec := nowSecond(now)
			for i := range s.shards {
				s.shards[i].sweep(sec)
			}
			if afterSweep != nil {
				afterSweep()
			}
		}
	}
}

var _ store.Bounded = (*Store)(nil)

// DecideBound is 0 and true: a decision never waits for anything but the
// store's locks.
func (s *Store) DecideBound() (time.Duration, bool) { return 0, true }
