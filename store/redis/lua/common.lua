-- common.lua: reads the request of a script deciding one key (after
-- lib.lua).
--
-- KEYS[1]  the limiter key: a string (a list for sliding_log)
-- ARGV[1]  the request, five doubles:
--            cost   0 <= cost <= burst+1 (the store caps it: any cost
--                   above the burst is denied alike, RetryAfter never)
--            now    microseconds since the epoch; or -1: read Redis TIME
--                   and give the key a TTL (the caller's time gives none)
--            then the limit's: rate, period (µs), 0 for the windows and
--            sliding_log; burst, p, n for the buckets, whose emission
--            interval is p/n microseconds, reduced.
--
-- Reply: five doubles, allowed (0 or 1), remaining, retry_after (µs, -1 for
-- never), reset (µs) and refill (µs: until remaining next grows,
-- limiter.Decision.Refill). The limit is not sent back: the caller knows it.

local key = KEYS[1]
local cost, t, l1, l2, l3 = struct.unpack('>ddddd', ARGV[1])
local expire
t, expire = decision_time(t)

-- Each algorithm sets these; save.lua stores value (nil: nothing to store)
-- and replies with the decision, or with reply when a batch set it.
local allowed, remaining, retry, reset, refill = 0, 0, 0, 0, 0
local value, reply
