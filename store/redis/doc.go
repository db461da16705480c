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
// hash tag, so a key's state lives on one node whatever it contains. The
// key is a hash: fields a and b, as limiter.State's A and B, except that
// sliding_window keeps its two counts in fields prev and curr (Go packs them
// into one int64, beyond 2^53), and gcra keeps the time of the last
// admitted request and the bucket's level then, rather than Go's
// theoretical arrival time, which can exceed 2^53 µs. sliding_log's key is
// a list: the total cost, then a time and a cost per entry, oldest first,
// so that a decision reads only the entries that expire, never the whole
// log. The scripts in lua/ describe each layout.
//
// # Expiry
//
// After each write the key gets a PEXPIRE of its Reset, rounded up to a
// whole millisecond: once Reset has passed its state cannot change a
// decision, so Redis forgets it by itself. With CallerTime the keys get no
// TTL, as Redis's clock and the caller's have nothing in common.
//
// # Timeouts and failures
//
// Every operation runs under Options.Timeout (default 50ms), on top of the
// caller's context, so a dead or hung Redis costs each request at most that
// long before it gets an error, and the caller's failure policy decides. An
// error never means "over the limit"; it means no decision was made. A
// script that timed out may still have run.
package redis
