-- leaky_bucket: limiter.leakyBucket (limiter/bucket.go), the leaky bucket as
-- a meter. Levels count in units of 1/n microsecond: one request is p units.
-- The hash holds a = level (units), b = last update (µs).

local s = read_hash('a', 'b')
local capacity = burst * p
local level, last = s[1], s[2]
if last == 0 then
  level, last = 0, t
end
if t < last then -- the clock went back: no leak
  t = last
end
level = drain(level, t - last)

local allowed, retry = 0, 0
if cost > burst then
  retry = NEVER
elseif cost * p <= capacity - level then
  allowed = 1
  level = level + cost * p
else
  -- Go computes level + need - capacity; level + need can pass 2^53, so
  -- the same number is computed as need - (capacity - level).
  retry = ceil_div(cost * p - (capacity - level), n)
end
local reset = ceil_div(level, n)

if allowed == 1 then
  save_hash(reset, 'a', int(level), 'b', int(t))
end
return {allowed, burst, math.floor((capacity - level) / p), retry, reset}
