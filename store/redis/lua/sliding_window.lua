-- sliding_window: limiter.slidingWindow (limiter/window.go). The state
-- (state.lua) is s1 = current window start (µs), s2 and s3 = the previous
-- and current window's counts (Go packs them into one int64; here
-- prev<<32 would leave the exact range, so they are two fields).
--
-- The previous window's share of the sliding period at elapsed time e,
-- limiter.weighted, is floor(prev * (period-e) / period), in doubles,
-- operation for operation as Go computes it, so both round alike.

local rate, period = l1, l2
if rebase and w2 ~= period and (s2 > 0 or s3 > 0) then
  -- limiter.rebaseSliding: the old estimate at t (or the window's start,
  -- for a clock gone back) becomes the count of the new window holding t.
  local at = t
  if at < s1 then
    at = s1
  end
  local old = at - math.fmod(at, w2)
  local prev, curr = s2, s3
  if old == s1 then
  elseif old == s1 + w2 then
    prev, curr = curr, 0
  else
    prev, curr = 0, 0
  end
  local used = floor((prev * (w2 - (at - old))) / w2) + curr
  if used > w1 then
    used = w1
  end
  if used == 0 then
    s1, s2, s3 = 0, 0, 0
  else
    s1, s2, s3 = at - math.fmod(at, period), 0, used
  end
end
local start = t - math.fmod(t, period)
local prev, curr = s2, s3
if start == s1 then -- the same window
elseif start < s1 then -- the clock went back: stay in the newer window
  start, t = s1, s1
elseif start == s1 + period then
  prev, curr = curr, 0
else
  prev, curr = 0, 0
end
local e = t - start
-- A clock gone back within the window weighs the previous window more and
-- can push the estimate past the rate: stay at the rate then.
local used = floor((prev * (period - e)) / period) + curr
if used > rate then
  used = rate
end

-- weighted is limiter.weighted, as above.
local function weighted(count, x)
  return floor((count * (period - x)) / period)
end

-- first_fit returns the least elapsed time x in [lo, period) at which
-- weighted(count, x) <= room, or nil: limiter.firstFit, which first tries
-- where the arithmetic puts x and searches only if weighted does not
-- confirm it (the answer is the search's either way).
local function first_fit(count, room, lo)
  local hi = period - 1
  if lo > hi or weighted(count, hi) > room then
    return nil
  end
  if count <= 0 then
    return lo
  end
  local x = period + 1 - math.ceil(((room + 1) * period) / count)
  if x < lo then
    x = lo
  elseif x > hi then
    x = hi
  end
  for _ = 1, 3 do
    if weighted(count, x) > room then
      x = x + 1
    elseif x > lo and weighted(count, x - 1) <= room then
      x = x - 1
    else
      return x
    end
  end
  while lo < hi do
    local mid = lo + floor((hi - lo) / 2)
    if weighted(count, mid) <= room then
      hi = mid
    else
      lo = mid + 1
    end
  end
  return lo
end

-- retry_after returns how long after e a request of cost c (c <= rate)
-- first fits, with the counts as they are when it is called:
-- limiter.slidingRetry.
local function retry_after(c)
  local room = rate - curr - c
  local at = room >= 0 and first_fit(prev, room, e + 1)
  if at then
    return at - e
  end
  at = first_fit(curr, rate - c, 0)
  if at then
    return period - e + at
  end
  return period - e + period
end

if cost > rate then
  retry = NEVER
elseif used + cost <= rate then
  allowed = 1
  curr = curr + cost
  used = used + cost
  if cost > 0 then -- the reservation, for Settle
    held_at, held_level = t, curr
  end
else
  retry = retry_after(cost)
end
if curr > 0 then
  reset = start + 2 * period - t
elseif prev > 0 then
  reset = start + period - t
end
remaining = rate - used
if remaining < 0 then
  remaining = 0
end
if remaining < rate then -- when a request of remaining+1 would first fit
  refill = retry_after(remaining + 1)
end

if allowed == 1 then
  value = struct.pack('>ddd', start, prev, curr)
elseif rebase then -- a denial changes nothing: the state as rebased, not as seen from t
  value = struct.pack('>ddd', s1, s2, s3)
end
