-- gcra: limiter.gcra (limiter/bucket.go). Levels count in units of 1/n
-- microsecond: one request is p units.
--
-- Go keeps the theoretical arrival time as TAT (µs) plus a fraction f
-- (units), that is TAT*n + f units. TAT can reach t + burst*p/n, beyond
-- 2^53 for a large burst of a long period, where doubles are no longer
-- exact. So the state (state.lua) holds the same quantity as s1 = the time
-- of the last admitted request t0 (µs) and s2 = the level then (units):
-- TAT*n + f = t0*n + s2. The level at t is that less t*n, between 0 and the
-- capacity, which is what Go computes from TAT and f:
--   t >= t0: s2 drained over t - t0 (0 once TAT has passed);
--   t <  t0: the clock went back and the key looks fuller, s2 + (t0-t)*n,
--            at most full.
-- Ceilings are floor((a + b - 1) / b), limiter.ceilDiv, written out.

local burst, p, n = l1, l2, l3
if rebase then
  -- limiter.rebaseGCRA: the level at t under the old limit, computed as
  -- below, in the new units; a level of 0 is a fresh state, as in Go.
  local full, level = w1 * w2, 0
  if t >= s1 then -- fuller than the burst (held requests) reads as full
    level = math.min(drain(s2, t - s1, w3), full)
  elseif s1 - t >= floor((full - s2 + w3 - 1) / w3) then
    level = full
  else
    level = s2 + (s1 - t) * w3
  end
  level = convert_level(level, w2, burst, p)
  if level == 0 then
    s1, s2 = 0, 0
  else
    s1, s2 = t, level
  end
end
local capacity = burst * p
local level
if t >= s1 then -- limiter.drain
  if t - s1 >= floor((s2 + n - 1) / n) then
    level = 0
  else
    level = s2 - (t - s1) * n
  end
  if level > capacity + queue then -- held under a longer delay: full
    level = capacity + queue
  end
elseif s1 - t >= floor((capacity + queue - s2 + n - 1) / n) then
  level = capacity + queue -- full, with what held requests queue
else
  level = s2 + (s1 - t) * n
end

-- The admission is leaky_bucket.lua's too, written out in both: a Lua function
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

-- Go leaves the state as it was for a cost of 0; so does this, but for
-- deleting a key that has drained (Reset 0) and writing a rebased one.
if rebase or allowed == 1 and (cost > 0 or reset == 0) then
  value = struct.pack('>dd', t, level)
end
