-- bucket_admit.lua: the buckets' refill and admission, limiter.drain and
-- limiter.admit, shared by token_bucket.lua, leaky_bucket.lua and
-- gcra.lua: each splices it in where its own reading of the state ends
-- (the line "-- splice: bucket_admit.lua", replaced by these lines when
-- the store reads the file). It is written out rather than called: a Lua
-- function call per decision cost a hot key 5-10% of its decisions per
-- second (bench/tools/redisbench -mode hot).
--
-- In: the locals level (units used at last, at most the capacity plus the
-- queue once drained), last (µs, at most t), capacity (burst * p), and
-- burst, p, n, cost, t and queue as the algorithm reads them. Out: level
-- after the decision, and allowed, retry, held_at, held_level, reset,
-- remaining and refill for the reply (common.lua).

-- limiter.drain: the level at t, less what t - last microseconds take
-- away at n units each, never below 0.
if t - last >= floor((level + n - 1) / n) then
  level = 0
else
  level = level - (t - last) * n
end
if level > capacity + queue then -- held under a longer delay: full
  level = capacity + queue
end

if cost > burst then
  retry = NEVER
elseif cost * p <= capacity - level or cost == 0 then -- a look is never held
  allowed = 1
  if cost > 0 then -- the reservation, for Settle (limiter.admit)
    level = level + cost * p
    held_at, held_level = t, level
  end
else
  -- Go computes level + need - capacity; level + need can pass 2^53, so
  -- the same number is computed as need - (capacity - level). At most
  -- queue over, the request is held for its turn (limiter.admit); retry
  -- is then its delay.
  local over = cost * p - (capacity - level)
  if over <= queue then
    allowed = 1
    retry = floor((over + n - 1) / n)
    level = level + cost * p
    held_at, held_level = t, level
  else
    retry = floor((over - queue + n - 1) / n)
  end
end
reset = floor((level + n - 1) / n)
remaining = floor((capacity - level) / p)
if remaining < 0 then -- held requests fill the bucket beyond its burst
  remaining = 0
end
if remaining < burst then -- limiter.refill: room for one more request
  refill = floor(((remaining + 1) * p - (capacity - level) + n - 1) / n)
end
