-- token_bucket: limiter.tokenBucket (limiter/bucket.go). Levels count in
-- units of 1/n microsecond: one request is p units. The state (state.lua)
-- is s1 = tokens (units), s2 = last update (µs); a new key starts full.
-- Ceilings are floor((a + b - 1) / b), limiter.ceilDiv, written out.

local burst, p, n = l1, l2, l3
if rebase and s2 ~= 0 then
  -- limiter.Reinterpret: the used part of the old bucket, drained at the
  -- old rate to t (or kept, for a clock gone back), in the new units.
  local at = s2
  if t > at then
    at = t
  end
  local level = convert_level(drain(w1 * w2 - s1, at - s2, w3), w2, burst, p)
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
-- limiter.drain of the empty part: it refills at n units a microsecond.
local empty = capacity - tokens
if t - last >= floor((empty + n - 1) / n) then
  tokens = capacity
else
  tokens = capacity - (empty - (t - last) * n)
end

if cost > burst then
  retry = NEVER
elseif cost * p <= tokens then
  allowed = 1
  tokens = tokens - cost * p
else
  retry = floor((cost * p - tokens + n - 1) / n)
end
reset = floor((capacity - tokens + n - 1) / n)
remaining = floor(tokens / p)
if remaining < burst then -- limiter.refill: room for one more request
  refill = floor(((remaining + 1) * p - tokens + n - 1) / n)
end

if allowed == 1 or rebase then
  value = struct.pack('>dd', tokens, t)
end
