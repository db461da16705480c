-- common.lua: the prelude of every sluice algorithm script. Each script the
-- store loads is this prelude followed by one algorithm's file, so that the
-- algorithm reads like its Go counterpart in package limiter, which is the
-- reference: the scripts must return the same Decision for the same inputs.
--
-- Numbers in Redis's Lua 5.1 are IEEE-754 doubles. Every value computed here
-- is an integer below 2^53 (limiter.New guarantees burst*p + n <= 2^53 and
-- times are clamped to 2^52), so the arithmetic is exact and agrees with
-- Go's int64 arithmetic. Integer division is math.floor(a / b), which is
-- exact for 0 <= a < 2^53; remainders use math.fmod, which is always exact.
--
-- KEYS[1]  the limiter key: a hash (a list for sliding_log)
-- ARGV[1]  rate     requests per period
-- ARGV[2]  burst    bucket size; the rate for the window algorithms
-- ARGV[3]  period   in microseconds
-- ARGV[4]  p        the emission interval is p/n microseconds, reduced
-- ARGV[5]  n
-- ARGV[6]  cost     0 <= cost <= burst+1 (the store caps it: any cost above
--                   the burst is denied alike, with RetryAfter never)
-- ARGV[7]  now      microseconds since the epoch, or -1 to read Redis TIME
-- ARGV[8]  expire   1: PEXPIRE the key at Reset; 0: give it no TTL
--
-- Reply: {allowed (0 or 1), limit, remaining, retry_after (µs, -1 for
-- never), reset (µs)}.

local key = KEYS[1]
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local period = tonumber(ARGV[3])
local p = tonumber(ARGV[4])
local n = tonumber(ARGV[5])
local cost = tonumber(ARGV[6])
local expire = ARGV[8] == '1'

local NEVER = -1
local MAX_TIME = 4503599627370496 -- 2^52 µs, about the year 2112

-- t is now in whole microseconds, clamped like limiter.clampTime. Redis
-- TIME is the one clock all instances share; its value is below 2^53 µs, so
-- sec*1000000 + usec is exact.
local t
if ARGV[7] == '-1' then
  local now = redis.call('TIME')
  t = tonumber(now[1]) * 1000000 + tonumber(now[2])
else
  t = tonumber(ARGV[7])
end
t = math.min(math.max(t, 1), MAX_TIME)

-- ceil_div returns ceil(a/b) for a >= 0, b > 0, as limiter.ceilDiv.
local function ceil_div(a, b)
  return math.floor((a + b - 1) / b)
end

-- int formats an integer-valued number for Redis without an exponent
-- (tostring would give 14 significant digits only).
local function int(x)
  return string.format('%d', x)
end

-- drain returns level less what elapsed microseconds take away at n units
-- each, never below 0, as limiter.drain: elapsed*n is only computed when it
-- is below level, so it cannot leave the exact range.
local function drain(level, elapsed)
  if elapsed >= ceil_div(level, n) then
    return 0
  end
  return level - elapsed * n
end

-- read_hash returns the named fields of the key's hash as numbers, 0 for a
-- missing field or key. A key of another type (left by a rule whose
-- algorithm changed to or from sliding_log) is deleted and reads as fresh.
local function read_hash(...)
  local r = redis.pcall('HMGET', key, ...)
  if r.err then
    redis.call('DEL', key)
    r = {}
  end
  local out = {}
  for i = 1, select('#', ...) do
    out[i] = tonumber(r[i]) or 0
  end
  return out
end

-- set_expiry makes the key expire once Reset has passed, when its state can
-- no longer change a decision: ceil(reset) in milliseconds, at least 1.
local function set_expiry(reset)
  if expire then
    redis.call('PEXPIRE', key, int(math.max(ceil_div(reset, 1000), 1)))
  end
end

-- save_hash stores the state of an allowed request: the given field, value
-- pairs; or, when Reset is 0 and the state is as good as a fresh one,
-- deletes the key. A denied request never calls it: it changes nothing.
local function save_hash(reset, ...)
  if reset == 0 then
    redis.call('DEL', key)
    return
  end
  redis.call('HSET', key, ...)
  set_expiry(reset)
end

