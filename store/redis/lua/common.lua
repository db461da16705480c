-- common.lua: the prelude of every sluice algorithm script. Each script the
-- store loads is this prelude, then for every algorithm but sliding_log
-- state.lua (read the key), then the algorithm's own file, then save.lua
-- (write the key and reply), so that the algorithm reads like its Go
-- counterpart in package limiter, which is the reference: the scripts must
-- return the same Decision for the same inputs.
--
-- Numbers in Redis's Lua 5.1 are IEEE-754 doubles. Every value computed here
-- is an integer below 2^53 (limiter.New guarantees burst*p + n <= 2^53 and
-- times are clamped to 2^52), so the arithmetic is exact and agrees with
-- Go's int64 arithmetic. Integer division is floor(a / b), which is exact
-- for 0 <= a < 2^53; remainders use math.fmod, which is always exact.
--
-- The scripts run once per decision, so they are written for Redis's CPU:
-- numbers travel as big-endian IEEE-754 doubles (struct.pack('>d')), exact
-- for these integers and converted without parsing or printing;
-- library functions are held in locals; no closures on the common path.
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
-- Reply: four doubles, allowed (0 or 1), remaining, retry_after (µs, -1 for
-- never), reset (µs). The limit is not sent back: the caller knows it.

local key = KEYS[1]
local cost, t, l1, l2, l3 = struct.unpack('>ddddd', ARGV[1])
local floor, fmt = math.floor, string.format

local NEVER = -1
local MAX_TIME = 4503599627370496 -- 2^52 µs, about the year 2112

-- t is now in whole microseconds, clamped like limiter.clampTime. Redis
-- TIME is the one clock all instances share; its value is below 2^53 µs, so
-- sec*1000000 + usec is exact.
local expire = t == -1
if expire then
  t = redis.call('TIME')
  t = t[1] * 1000000 + t[2]
end
if t < 1 then
  t = 1
elseif t > MAX_TIME then
  t = MAX_TIME
end

-- Each algorithm sets these; save.lua stores value (nil: nothing to store)
-- and replies with the decision, or with reply when a batch set it.
local allowed, remaining, retry, reset = 0, 0, 0, 0
local value, reply
