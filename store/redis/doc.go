// Package redis is a store.Store on Redis or Redis Cluster: the six
// algorithms of package limiter as Lua scripts, so that every instance of
// sluice shares one counter per key.
//
// # One time authority
//
// Each script reads the time with Redis TIME, in microseconds, so that
// gateways whose clocks disagree still make one decision per request: the
// now passed to Decide is ignored. Options.CallerTime makes the scripts use
// that now instead; it exists for tests that replay time-step tables on a
// fake clock, and is wrong for instances with their own clocks.
//
// # Exactly the Go semantics
//
// Package limiter is the reference: for the same state, time and cost, a
// script returns the same Decision (Allowed, Limit, Remaining, RetryAfter,
// Reset) as limiter.Decide, including the rules for a clock that goes back,
// a cost of 0 and a cost above the limit. Lua's numbers are IEEE-754
// doubles; every value the scripts compute is an integer below 2^53
// (limiter.New rejects the limits for which that would fail), so the
// arithmetic is exact, and sliding_window's weighted estimate is computed in
// doubles by both, operation for operation. The tests replay random time
// steps through both and compare every decision.
//
// A denied request changes nothing in Redis, not even the key's expiry. An
// allowed request stores the new state, or deletes the key when its Reset
// is 0 (the state is then as good as a fresh one).
//
// # Keys
//
// A limiter key is one Redis key: Options.Prefix, then the store key in
// braces, "sluice:{<key>}", with '%', '{' and '}' in the store key written
// as %25, %7B and %7D. The braces make the whole store key the Redis Cluster
// hash tag, so a key's state lives on one node whatever it contains. A key
// with a group (store.GroupKey: the gateway groups a caller's keys) is
// "sluice:{<group>}<rest>" instead: a group's keys share a hash slot. The
// key is a string of big-endian IEEE-754 doubles (Lua's struct.pack), which
// hold these integers exactly and cost the script no parsing: two numbers,
// as limiter.State's A and B, then the limit the state was written under
// (its algorithm and the three numbers a request sends). sliding_window
// keeps three numbers, the window start and its two counts (Go packs the
// counts into one int64, beyond 2^53), and gcra keeps the time of the last
// admitted request and the bucket's level then, rather than Go's
// theoretical arrival time, which can exceed 2^53 µs. sliding_log's key is
// a list: the total cost, then a time and a cost per entry, oldest first,
// as decimal integers, so that a decision reads only the entries that
// expire, never the whole log. The scripts in lua/ describe each layout.
//
// A state written under another limit of its algorithm is reinterpreted
// under the request's limit first, exactly as limiter.Reinterpret does
// (lua/state.lua), and written back even when the request is denied. A
// key of another algorithm (another string, a list for or from
// sliding_log) reads as a fresh state, and so does a string in an earlier
// version's layout.
//
// Requests and replies travel the same way: the script gets the cost, the
// time and the limit as five doubles in one argument, and answers allowed,
// remaining, retry-after, reset and refill (limiter.Decision's fields) as
// five doubles; the caller knows the limit.
//
// # A hot key
//
// While two decisions on a key are in flight, the store's next decisions
// on that key (same limit) wait for them and then go together in one call
// of the algorithm's batch script, which decides them one after another at
// one Redis time, exactly as separate calls would: one flooding caller
// costs Redis two script calls per round trip instead of one per request.
// Nothing waits while fewer are in flight. A waiting request whose context
// ends leaves at once and is left out of the batch if it has not gone yet.
//
// # Several rules, one call
//
// DecideAll (store.Store) decides the rules of one HTTP request in
// one call of a script that combines the algorithms (lua/multi.lua): if
// every enforcing request is allowed every allowed one spends, otherwise
// none does. It needs all the keys on one node, so on a Redis Cluster the
// keys must be of one group (store.Key.Group: one hash tag), and it decides each key once;
// requests that are not so (and only those) are decided look then spend,
// in two or three round trips and not atomically (store.LookThenSpend:
// see DecideAll).
//
// # Expiry
//
// Each write gives the key a TTL of its Reset, rounded up to a whole
// millisecond (SET with PX, or PEXPIRE for sliding_log): once Reset has
// passed its state cannot change a decision, so Redis forgets it by itself.
// With CallerTime the keys get no TTL, as Redis's clock and the caller's
// have nothing in common.
//
// # Timeouts and failures
//
// Every operation runs under Options.Timeout (default 50ms), on top of the
// caller's context (a deadline of the caller's that comes sooner is used as
// it is), so a dead or hung Redis costs each request at most that long
// before it gets an error, and the caller's failure policy decides. An
// error never means "over the limit"; it means no decision was made. A
// script that timed out may still have run. When the caller's context is
// canceled (the caller has gone), the error matches context.Canceled, even
// if Redis missed the cancellation and the wait ended with the timeout, so
// that it is not taken for a failure of Redis.
//
// # Starting while Redis is down
//
// New connects before it returns, and fails if no address answers. With
// Options.Lazy it returns at once instead: the store connects on first use
// (or Connect), and tries again at most once a second of Options.Clock,
// each try bounded by 500ms. Calls made before it has connected fail at
// once with an error matching ErrNotConnected, which the caller's failure
// policy answers like any other (store/failover's circuit sends such a
// store only its probes).
//
// # Concurrency leases
//
// The Store is a store.Leaser too: a concurrency rule's requests in flight
// are leases in a sorted set per key, "<prefix>lease:{<key>}" (a lease key
// keeps its store key's hash tag, so a group's leases live on its node
// beside its rate keys, and is never a rate key). Each member is a lease,
// "<cost>:<id>", scored by the Redis TIME (µs) at which it expires; the
// member "#" holds minus the total cost, so that a decision reads only the
// leases that expire. Acquire and Release are one script call each
// (lua/lease*.lua); Renew sends one call per key, all in one pipeline.
// Lease IDs start with a random prefix drawn once per process, so
// instances never share one. The key's TTL is its latest lease's expiry,
// and the key is deleted with its last lease: an instance that dies leaves
// nothing behind for longer than the lease TTL. With CallerTime the
// scripts judge expiry at the caller's time and keys get no TTL.
package redis
