// Package limiter holds sluice's six rate-limiting algorithms as pure
// functions: Decide(limit, state, now, cost) returns a Decision and the key's
// new State. It does no I/O, reads no clock and keeps no state of its own, so
// that a store can persist the state anywhere (a sharded map, a Redis hash)
// and supply the atomicity. It imports only the standard library.
//
// A Limit is N requests per period (1 ms to 366 days), with a burst for the
// bucket algorithms. A request has a cost (units it consumes; 0 looks
// without consuming). Time is counted in whole microseconds since the Unix
// epoch, the resolution of Redis TIME, and windows are aligned on multiples
// of the period since the epoch so that separate instances agree.
//
// # What each algorithm guarantees
//
// Let N be the rate, P the period and B the burst.
//
//   - fixed_window: at most N in each epoch-aligned window. Around a
//     boundary up to 2N can pass within one period (N at the end of a window,
//     N at the start of the next); in any interval of length L at most
//     N*(ceil(L/P)+1).
//   - sliding_window: at most N in each epoch-aligned window, and the
//     estimate prev*(P-e)/P + curr never exceeds N, where e is the time into
//     the current window. The estimate is exact when the previous window's
//     requests were spread evenly; the worst case (all of them at its very
//     end) lets up to 2N pass within one sliding period, and over any
//     interval of length L at most N*(ceil(L/P)+1) pass. The estimate's
//     fractional part is rounded down; Reset is an upper bound (the end of
//     the window after which both counters are empty). It costs two
//     counters per key.
//   - sliding_log: exact. In every interval of length P (a request at time
//     a counts until a+P) at most N pass. It stores one entry per admitted
//     request (at most N; N is limited to 10000).
//   - token_bucket, gcra, leaky_bucket: exact, and the same traffic for all
//     three. A bucket of B refilled (drained) continuously at N per P; in any
//     interval of length L at most B + N*L/P pass. token_bucket stores tokens
//     and a time, gcra one theoretical arrival time, leaky_bucket (as a
//     meter: what would overflow is rejected, not queued) a level and a time.
//
// Refill is exact: bucket levels count in units of 1/n microsecond where
// P/N = p/n reduced, so no fraction of a token is ever lost or invented.
// Every value stays below 2^53, so the Redis Lua scripts (whose numbers are
// doubles) compute exactly the same decisions; New rejects the rare limit
// for which that would not hold.
//
// A state belongs to the limit it was written under. When a key's limit
// changes (a reloaded rule, a client on another plan), Reinterpret reads
// the state under the new limit, keeping what the key has spent, so that
// a change never hands out a fresh quota; a store keeps the limit with
// each state for that. A change of algorithm starts fresh.
//
// A bucket limit may have a delay (WithDelay): a request that would be
// denied but would pass within the delay is allowed with Decision.Delay,
// the time its caller must hold it for its turn, and its cost is counted
// at once, so that later requests queue behind it. What passes on at the
// end of the holds keeps the bucket's guarantee (to the microsecond a hold
// is rounded up to). Cancel gives a held request's cost back, but only
// while it is the key's last reservation: given back from under a later
// one, it would let a new request take that one's turn too.
//
// A cost known only after the request (a rule that counts only failures,
// a cost the service reports) is reserved when the request is decided and
// settled afterwards by Settle, with the Reservation of the decision: a
// refund gives back only what the key still shows of the reservation, so
// that no sequence of settlements lets more pass than the guarantees
// above, and a charge never takes Remaining below 0.
//
// Over the limit is a decision, not an error. A denied request consumes
// nothing; its Decision says when the same request would pass (RetryAfter),
// or Never if its cost exceeds what the limit can ever allow at once.
package limiter
