-- leaky_bucket: limiter.leakyBucket (limiter/bucket.go), the leaky bucket as
-- a meter. Levels count in units of 1/n microsecond: one request is p units.
-- The state (state.lua) is s1 = level (units), s2 = last update (µs).
-- Ceilings are floor((a + b - 1) / b), limiter.ceilDiv, written out.

local burst, p, n = l1, l2, l3
if rebase and s2 ~= 0 then
  -- limiter.Reinterpret: the level drained at the old rate to t (or kept,
  -- for a clock gone back), in the new units.
  local at = s2
  if t > at then
    at = t
  end
  local level = convert_level(drain(s1, at - s2, w3), w2, burst, p)
  if level == 0 then -- a fresh state, as in Go
    s1, s2 = 0, 0
  else
    s1, s2 = level, at
  end
end
local capacity = burst * p
local level, last = s1, s2
if last == 0 then
  level, last = 0, t
end
if t < last then -- the clock went back: no leak
  t = last
end
if t - last >= floor((level + n - 1) / n) then -- limiter.drain
  level = 0
else
  level = level - (t - last) * n
end

-- The admission is gcra.lua's too, written out in both: a Lua function
-- call per decision cost a hot key 5-10% of its decisions per second
-- (bench/tools/redisbench -mode hot).
if cost > burst then
  retry = NEVER
elseif cost * p <= capacity - level then
  allowed = 1
  level = level + cost * p
else
  -- Go computes level + need - capacity; level + need can pass 2^53, so
  -- the same number is computed as need - (capacity - level).
  retry = floor((cost * p - (capacity - level) + n - 1) / n)
end
reset = floor((level + n - 1) / n)
remaining = floor((capacity - level) / p)
if remaining < burst then -- limiter.refill: room for one more request
  refill = floor(((remaining + 1) * p - (capacity - level) + n - 1) / n)
end

if allowed == 1 or rebase then
  value = struct.pack('>dd', level, t)
end
