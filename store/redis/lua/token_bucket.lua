-- token_bucket: limiter.tokenBucket (limiter/bucket.go). Levels count in
-- units of 1/n microsecond: one request is p units. The state (state.lua)
-- is s1 = tokens (units), s2 = last update (µs); a new key starts full.
-- Ceilings are floor((a + b - 1) / b), limiter.ceilDiv, written out.

local burst, p, n = l1, l2, l3
if rebase and s2 ~= 0 then
  -- limiter.Reinterpret: the used part of the old bucket in the new units.
  local level, at = rebase_level(w1 * w2 - s1, s2, t, w1, w2, w3, burst, p)
  if level == 0 then -- a fresh state, as in Go
    s1, s2 = 0, 0
  else
    s1, s2 = burst * p - level, at
  end
end
local capacity = burst * p
local tokens, last = capacity, t
if s2 ~= 0 then
  tokens, last = s1, s2
end
if t < last then -- the clock went back: no refill
  t = last
end
-- The level is the empty part: it refills at n units a microsecond.
-- Requests held for their turn take tokens the bucket does not have yet
-- (tokens below 0).
local level = capacity - tokens
-- splice: bucket_admit.lua

if allowed == 1 or rebase then
  value = struct.pack('>dd', capacity - level, t)
end
