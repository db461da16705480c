-- common.lua: reads the request of a script deciding one key (after
-- lib.lua).
--
-- KEYS[1]  the limiter key: a string (a list for sliding_log)
-- ARGV[1]  the request, six doubles:
--            cost   0 <= cost <= burst+1 (the store caps it: any cost
--                   above the burst is denied alike, RetryAfter never)
--            now    microseconds since the epoch; or -1: read Redis TIME
--                   and give the key a TTL (the caller's time gives none)
--            then the limit's: rate, period (µs), 0 for the windows and
--            sliding_log; burst, p, n for the buckets, whose emission
--            interval is p/n microseconds, reduced; then the queue, the
--            units a bucket may hold beyond its burst for requests held
--            for their turn (limiter.Limit.WithDelay: delay µs * n; 0
--            without a delay, and for the windows).
--
-- Reply: seven doubles, allowed (0 or 1), remaining, retry (µs: for a
-- denied request its retry_after, -1 for never; for an allowed one its
-- delay, limiter.Decision.Delay), reset (µs), refill (µs: until remaining
-- next grows, limiter.Decision.Refill), and for an allowed request that
-- spent (held for its turn or not) its reservation (limiter.Reservation):
-- the time and the level (a window's count) after it, 0 and 0 otherwise.
-- The limit is not sent back: the caller knows it.

local key = KEYS[1]
local cost, t, l1, l2, l3, queue = struct.unpack('>dddddd', ARGV[1])
local expire
t, expire = decision_time(t)

-- Each algorithm sets these; save.lua stores value (nil: nothing to store)
-- and replies with the decision, or with reply when a batch set it.
local allowed, remaining, retry, reset, refill, held_at, held_level = 0, 0, 0, 0, 0, 0, 0
local value, reply
