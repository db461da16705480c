-- lib.lua: what every sluice script starts with. Each script the store
-- loads is this file, then common.lua (read the request), then for every
-- algorithm but sliding_log state.lua (read the key), then the
-- algorithm's own file (the three buckets' files splice in
-- bucket_admit.lua, their one refill and admission), then save.lua (write
-- the key and reply), so that the algorithm reads like its Go counterpart
-- in package limiter, which is the reference: the scripts must return the
-- same Decision for the same inputs. (batch_begin.lua and multi.lua describe the two other shapes.)
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

local floor, fmt = math.floor, string.format

local NEVER = -1
local MAX_TIME = 4503599627370496 -- 2^52 µs, about the year 2112

-- decision_time returns the time of a decision in whole microseconds, and
-- whether keys written get a TTL. t is the caller's time, or -1: read Redis
-- TIME, the one clock all instances share (its value is below 2^53 µs, so
-- sec*1000000 + usec is exact), and give keys a TTL (the caller's time
-- gives none). The time is clamped like limiter.clampTime.
local function decision_time(t)
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
  return t, expire
end

-- convert_level is limiter.convertLevel: a bucket level in units of which
-- one request is from_p, in the units of a limit of the given burst whose
-- request is p, a fraction of a unit rounded up, at most burst*p. The
-- product r*p can pass 2^53, so the fraction's part is long division of
-- r*p by from_p, p taken 7 bits at a time (p < 2^49, so 7 chunks): every
-- intermediate stays below 2^53 (rem < from_p < 2^46, rem*128 < 2^53).
-- Only a rebased state (state.lua) calls it.
local function convert_level(level, from_p, burst, p)
  local q = floor(level / from_p)
  if q >= burst then
    return burst * p
  end
  local r = level - q * from_p
  local f, rem = 0, 0
  for k = 6, 0, -1 do
    rem = rem * 128 + r * math.fmod(floor(p / 2 ^ (7 * k)), 128)
    local d = floor(rem / from_p)
    f, rem = f * 128 + d, rem - d * from_p
  end
  if rem > 0 then
    f = f + 1
  end
  return q * p + f
end

-- drain is limiter.drain: level less what elapsed microseconds take away at
-- n units each, never below 0.
local function drain(level, elapsed, n)
  if elapsed >= floor((level + n - 1) / n) then
    return 0
  end
  return level - elapsed * n
end

-- rebase_level is limiter.rebaseLevel: the level of a token_bucket or
-- leaky_bucket (the used part of the bucket, in units of the old limit w1,
-- w2, w3, at time last) drained at the old rate to t (or kept, for a clock
-- gone back) and converted to the units of burst and p; and its time, or
-- 0, 0 for an empty bucket: a fresh state, as in Go. A bucket fuller than
-- its burst (requests held for their turn) reads as full. Only a rebased
-- state (state.lua) calls it.
local function rebase_level(level, last, t, w1, w2, w3, burst, p)
  if t < last then
    t = last
  end
  level = convert_level(math.min(drain(level, t - last, w3), w1 * w2), w2, burst, p)
  if level == 0 then
    return 0, 0
  end
  return level, t
end

-- ttl_ms is a TTL of us microseconds as PX and PEXPIRE take it: whole
-- milliseconds rounded up, at least 1, in decimal.
local function ttl_ms(us)
  local ms = floor((us + 999) / 1000)
  if ms < 1 then
    ms = 1
  end
  return fmt('%d', ms)
end

-- save stores value, the state of an allowed request, in key with a TTL
-- of its reset rounded up to a whole millisecond (once reset has passed
-- the state cannot change a decision); or, when reset is 0 and the state
-- is as good as a fresh one, deletes the key.
local function save(key, value, reset, expire)
  if reset == 0 then
    redis.call('DEL', key)
  elseif expire then
    redis.call('SET', key, value, 'PX', ttl_ms(reset))
  else
    redis.call('SET', key, value)
  end
end

-- settled_state is a settled state (settle.lua's n1, n2, n3) as state.lua
-- reads it back: three numbers for sliding_window (alg 2), two for the
-- others, then the limit's tag.
local function settled_state(alg, n1, n2, n3, tag)
  if alg == 2 then
    return struct.pack('>ddd', n1, n2, n3) .. tag
  end
  return struct.pack('>dd', n1, n2) .. tag
end
