-- bucket_refund.lua: whether a bucket's reservation can still be given
-- back, and the state if it is, limiter.lastSpent and limiter.giveBack,
-- shared by cancel_end.lua (limiter.Limit.Cancel) and settle.lua
-- (limiter.refundBucket), each of which splices it in (the line
-- "-- splice: bucket_refund.lua").
--
-- In: the locals alg, s1 and s2 (state.lua), burst, p and n (the limit),
-- r_at and r_level (the reservation) and need, the units to give back.
-- Out: the locals level, the state's level; refundable, whether the
-- reservation is still the key's last spending (the point the bucket
-- drains to, at*n + level, which only spending moves on, is still
-- r_at*n + r_level; compared as level - r_level = (r_at - at)*n, exact
-- whenever it can hold, both levels being below 2^53) and holds need;
-- and g1, g2, the state with need given back: gcra goes back to the
-- reservation's point less need, the others give back need, but no more
-- of it than has not drained since.

local level, at = s1, s2 -- leaky_bucket: level, time
if alg == 4 then -- token_bucket: tokens, time
  level = burst * p - s1
elseif alg == 5 then -- gcra: time, level (see gcra.lua)
  level, at = s2, s1
end
local dt = r_at - at
local refundable = at ~= 0 and r_level >= need and math.abs(dt) <= floor(9007199254740992 / n) and
  level - r_level == dt * n
local g1, g2 = s1 - math.min(need, level), s2
if alg == 4 then
  g1 = s1 + math.min(need, level)
elseif alg == 5 then
  g1, g2 = r_at, r_level - need
end
