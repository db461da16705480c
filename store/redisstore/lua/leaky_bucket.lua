-- leaky_bucket: limiter.leakyBucket (limiter/bucket.go), the leaky bucket as
-- a meter, and with a delay as a queue. Levels count in units of 1/n
-- microsecond: one request is p units.
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
  -- A bucket fuller than its burst (requests held for their turn) reads
  -- as full.
  local level = convert_level(math.min(drain(s1, at - s2, w3), w1 * w2), w2, burst, p)
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
if level > capacity + queue then -- held under a longer delay: full
  level = capacity + queue
end

-- The admission is gcra.lua's too, written out in both: a Lua function
-- call per decision cost a hot key 5-10% of its decisions per second
-- (bench/tools/redisbench -mode hot).
if cost > burst then
  retry = NEVER
elseif cost * p <= capacity - level or cost == 0 then -- a look is never held
  allowed = 1
  if cost > 0 then -- the reservation, for Settle (limiter.admit)
    level = level + cost * p
    held_at, held_level = t, level
  end
else
  -- Go computes level + need - capacity; level + need can pass 2^53, so
  -- the same number is computed as need - (capacity - level). At most
  -- queue over, the request is held for its turn (limiter.admit); retry
  -- is then its delay.
  local over = cost * p - (capacity - level)
  if over <= queue then
    allowed = 1
    retry = floor((over + n - 1) / n)
    level = level + cost * p
    held_at, held_level = t, level
  else
    retry = floor((over - queue + n - 1) / n)
  end
end
reset = floor((level + n - 1) / n)
remaining = floor((capacity - level) / p)
if remaining < 0 then -- held requests fill the bucket beyond its burst
  remaining = 0
end
if remaining < burst then -- limiter.refill: room for one more request
  refill = floor(((remaining + 1) * p - (capacity - level) + n - 1) / n)
end

if allowed == 1 or rebase then
  value = struct.pack('>dd', level, t)
end
