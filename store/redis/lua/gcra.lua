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
-- The level at t: drained from t0 by bucket_admit.lua, or (the clock
-- went back) read at t itself, where draining changes nothing.
local level, last = s2, s1
if t < s1 then
  if s1 - t >= floor((capacity + queue - s2 + n - 1) / n) then
    level = capacity + queue -- full, with what held requests queue
  else
    level = s2 + (s1 - t) * n
  end
  last = t
end
-- splice: bucket_admit.lua

-- Go leaves the state as it was for a cost of 0; so does this, but for
-- deleting a key that has drained (Reset 0) and writing a rebased one.
if rebase or allowed == 1 and (cost > 0 or reset == 0) then
  value = struct.pack('>dd', t, level)
end
