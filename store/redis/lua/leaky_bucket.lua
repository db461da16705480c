-- leaky_bucket: limiter.leakyBucket (limiter/bucket.go), the leaky bucket as
-- a meter, and with a delay as a queue. Levels count in units of 1/n
-- microsecond: one request is p units.
-- The state (state.lua) is s1 = level (units), s2 = last update (µs).
-- Ceilings are floor((a + b - 1) / b), limiter.ceilDiv, written out.

local burst, p, n = l1, l2, l3
if rebase and s2 ~= 0 then -- limiter.Reinterpret, in the new units
  s1, s2 = rebase_level(s1, s2, t, w1, w2, w3, burst, p)
end
local capacity = burst * p
local level, last = s1, s2
if last == 0 then
  level, last = 0, t
end
if t < last then -- the clock went back: no leak
  t = last
end
-- splice: bucket_admit.lua

if allowed == 1 or rebase then
  value = struct.pack('>dd', level, t)
end
