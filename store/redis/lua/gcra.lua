-- gcra: limiter.gcra (limiter/bucket.go). Levels count in units of 1/n
-- microsecond: one request is p units.
--
-- Go keeps the theoretical arrival time as TAT (µs) plus a fraction f
-- (units), that is TAT*n + f units. TAT can reach t + burst*p/n, beyond
-- 2^53 for a large burst of a long period, where doubles are no longer
-- exact. So the hash holds the same quantity as a = the time of the last
-- admitted request t0 (µs) and b = the level then (units):
-- TAT*n + f = t0*n + b. The level at t is that less t*n, between 0 and the
-- capacity, which is what Go computes from TAT and f:
--   t >= t0: b drained over t - t0 (0 once TAT has passed);
--   t <  t0: the clock went back and the key looks fuller, b + (t0-t)*n,
--            at most full.

local s = read_hash('a', 'b')
local capacity = burst * p
local level
if t >= s[1] then
  level = drain(s[2], t - s[1])
elseif s[1] - t >= ceil_div(capacity - s[2], n) then
  level = capacity
else
  level = s[2] + (s[1] - t) * n
end

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

-- Go leaves the state as it was for a cost of 0; so does this, but for
-- deleting a key that has drained (Reset 0).
if allowed == 1 and (cost > 0 or reset == 0) then
  save_hash(reset, 'a', int(t), 'b', int(level))
end
return {allowed, burst, math.floor((capacity - level) / p), retry, reset}
