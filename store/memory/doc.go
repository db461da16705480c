// Package memory is sluice's embedded store: the state of every key in this
// process's memory, bounded in size, safe for concurrent use. It is the
// default store, and the right one for a single instance; several instances
// each counting on their own need store/redis to share one count.
//
// # Sharding
//
// Keys are spread over a power-of-two number of shards by a seeded
// hash/maphash of the key (fast, no allocation, and a per-store seed so
// callers cannot aim many keys at one shard). Each shard is a sync.Mutex
// and an open-addressing hash table whose positions hold small fixed-size
// entries: a pointer to the key, its length and 24 bits of its hash, the
// two integers of limiter.State, the limit they were written under (an
// index into the shard's table of limits: every key of one limit shares one
// copy), the second at which the state expires and a last-use tick, 40
// bytes. The table grows by a quarter when 7/8 full, so that, growing, it
// is 70% to 87.5% full, and an idle key costs about 49 bytes besides its
// own bytes (bench/run.sh core, BenchmarkSluiceIdleKeyMemory, over 1M
// keys). A decision locks one shard, looks the key up at the position its
// hash gives (one random memory access for the entry, one for the key's
// bytes), reinterprets its state if its limit changed
// (limiter.Reinterpret), runs limiter.Decide and writes the new state in
// place: one hash and no allocation when the key exists. A new key's string
// is copied once, so the store never retains a caller's buffer.
// sliding_log's entries live in a separate per-shard map, only while the
// key has some: up to 16 bytes per request admitted in the last period (at
// most the rate), and at most Options.MaxLogEntries of them across the
// store's keys (see below).
//
// # Several rules, all or nothing
//
// DecideAll (store.Store) decides the rules of one HTTP request as
// one, the way golang.org/x/time/rate computes and then commits: it locks
// the distinct shards of the request's keys in ascending order (so that
// two calls never wait on each other in a circle), decides every rule on a
// copy of its key's state, and writes the states back only if every
// enforcing rule allowed; otherwise nothing is spent, and the rules that
// allowed answer a look. A key asked twice in one call sees its first
// request. The one exception is a store out of room: a new key that finds
// none is decided on its overflow counter after the others have spent
// (see "A full store lifts no limit").
//
// # Bounds
//
// The store holds at most Options.MaxKeys keys, split evenly over the
// shards, besides the reserved keys, the overflow counters and the
// guests (see below).
// Each entry remembers when its state becomes as good as a fresh one (the
// decision time plus Decision.Reset, rounded up to a second): the state
// can then no longer change a decision and the key may be forgotten.
// A background sweeper, one goroutine ticking on Options.Clock, removes such
// expired keys shard by shard, holding each shard's lock for at most 1024
// table positions at a time. Expiry is judged by the sweeper's clock, so the times
// given to Decide should come from the same clock.
//
// # Eviction order
//
// When a new key arrives at a full shard, the shard first drops its expired
// keys. If it is still full, it evicts the least recently used of its keys
// that are not being limited: about an eighth of them in one pass, oldest
// first, so that the walk over the shard is paid for by the many new keys
// that fill the room it made. A key is being limited when its last decision
// denied or left nothing remaining, and its reset has not passed: such a
// key is never evicted, so that a flood of new keys cannot erase the count
// of a caller that is over its limit. Evicting an idle key that is not
// limited forgets what it had spent: its next request starts fresh, which
// can let it pass a little more than its limit. Decisions that leave a new
// key's state fresh (a denied or zero-cost request) are answered without
// storing the key.
//
// # A full store lifts no limit
//
// If every key of the shard is being limited, the new key is not stored:
// its request is decided on the overflow counter of its rule and limit,
// one counter shared by every key of that rule and limit that found no
// room (the rule is the first part of a store.Key, after its group). Such
// keys are limited jointly, never waved through: a flood of distinct keys
// can make the store full, but cannot switch a limit off for anyone. A key
// that later finds room starts a counter of its own, so over one period it
// may pass its own limit besides what it got from the overflow counter,
// which admits at most the limit in total. Such a decision says so
// (store.Result.Shared), so that a front can tell its caller that the
// callers without room spent the limit, not it.
//
// Listed keys (store.Key.Listed: the gateway marks the keys of the clients
// its configuration lists), and the overflow counters,
// always have room: they are stored beyond MaxKeys and never evicted, only
// forgotten once expired. There is one overflow counter per rule and limit,
// and the listed keys are as many as the policy lists, so
// neither grows with a flood of distinct keys.
//
// sliding_log entries are bounded the same way. The store holds at most
// Options.MaxLogEntries of them, counted across its keys. A decision that
// would add one beyond the bound first drops the shard's expired keys and
// evicts the least recently used eighth of its keys that have a log and
// are not being limited; if that frees nothing, a key that is not reserved
// is decided on its overflow counter, its own log left as it was. A denial
// needs no entry, so a key over its limit is still denied by its own log.
// Reserved keys and overflow counters always get their entries: their logs
// (at most the rate each) come on top of the bound.
//
// # Guests
//
// Keys for which Options.Guest returns true (the gateway names package
// rls's counters so: decision.ForeignKey) are guests: keys a caller makes
// as it likes, values, limits and windows included. They live in a room
// of their own, Options.MaxGuestKeys keys split over the shards as
// MaxKeys is, with Options.MaxGuestLogEntries sliding_log entries of
// their own: they take no room from the other keys, and the other keys
// none from them. A guest is never decided on an overflow counter for
// want of a place (only, as a last resort, for a log entry that the
// guests' full bound cannot give in its shard): when a shard's guests'
// room is full, the shard drops its expired keys and then evicts about an
// eighth of its guests, the least recently used first and those not being
// limited before those that are. Being limited does not keep a guest, as
// it keeps another key, because a caller can make a guest limited at will
// (a limit of 1 for a year, hit once): otherwise a flood of such guests
// would fill the room until they expired. A guest may thus have its count
// forgotten by a flood of other guests, and start again fresh.
//
// # Concurrency trade-offs
//
// One mutex per shard keeps every decision a plain read-modify-write, with
// no retry loops, and keeps the algorithms free of atomics. Decisions on
// different shards never contend; shards are padded to separate cache lines.
// Decisions on one hot key serialise on its shard's lock, which is held for
// the lookup and the algorithm only; the hashing and the caller's clock
// read happen outside it. Eviction and sweeping do their work under the
// same lock: eviction walks one shard, in amortised constant time per new
// key; the sweeper releases the lock every 1024 table positions.
//
// # Concurrency leases
//
// The Store is a store.Leaser too (lease.go): each key's leases (requests
// in flight under a concurrency limit) are a short list of ID, cost and
// expiry, in shards of their own, locked as the rate shards are. Expired
// leases are dropped when their key is next used, and, when a shard is
// full, from the whole shard (at most once a second while that frees
// nothing); there is no sweep, so nothing runs while no request comes. The
// store holds at most MaxKeys leases of keys that are not reserved, split
// over the shards as keys are. A lease that finds no room goes to its
// rule's overflow key (one per rule and limit, like the overflow
// counters), which admits the limit in flight in all, counting the
// requesting key's own leases too: a flood of distinct keys cannot lift a
// limit, and a key never holds more than the limit through it. Reserved
// keys and overflow keys always have room.
package memory
