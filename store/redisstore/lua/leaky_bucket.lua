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
-- splice: bucket_admit.lua

if allowed == 1 or rebase then
  value = struct.pack('>dd', level, t)
end
