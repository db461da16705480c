-- token_bucket: limiter.tokenBucket (limiter/bucket.go). Levels count in
-- units of 1/n microsecond: one request is p units. The state (state.lua)
-- is s1 = tokens (units), s2 = last update (µs); a new key starts full.
-- Ceilings are floor((a + b - 1) / b), limiter.ceilDiv, written out.

local burst, p, n = l1, l2, l3
if width == 3 then -- sliding_window's (the rule's algorithm changed): fresh
  s1, s2 = 0, 0
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

if allowed == 1 then
  value = struct.pack('>dd', tokens, t)
end
