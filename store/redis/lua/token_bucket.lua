-- token_bucket: limiter.tokenBucket (limiter/bucket.go). Levels count in
-- units of 1/n microsecond: one request is p units. The hash holds
-- a = tokens (units), b = last update (µs); a new key starts full.

local s = read_hash('a', 'b')
local capacity = burst * p
local tokens, last = capacity, t
if s[2] ~= 0 then
  tokens, last = s[1], s[2]
end
if t < last then -- the clock went back: no refill
  t = last
end
tokens = capacity - drain(capacity - tokens, t - last)

local allowed, retry = 0, 0
if cost > burst then
  retry = NEVER
elseif cost * p <= tokens then
  allowed = 1
  tokens = tokens - cost * p
else
  retry = ceil_div(cost * p - tokens, n)
end
local reset = ceil_div(capacity - tokens, n)

if allowed == 1 then
  save_hash(reset, 'a', int(tokens), 'b', int(t))
end
return {allowed, burst, math.floor(tokens / p), retry, reset}
