-- sliding_window: limiter.slidingWindow (limiter/window.go). The hash holds
-- a = current window start (µs), prev and curr = the previous and current
-- window's counts (Go packs them into one int64; here prev<<32 would leave
-- the exact range, so they are two fields).

-- weighted is the previous window's share of the sliding period at elapsed
-- time e: floor(prev * (period-e) / period), in doubles, operation for
-- operation as limiter.weighted computes it, so both round alike.
local function weighted(prev, e)
  return math.floor((prev * (period - e)) / period)
end

-- first_fit returns the least elapsed time x in [lo, period) at which
-- weighted(prev, x) <= room, or nil: limiter.firstFit.
local function first_fit(prev, room, lo)
  local hi = period - 1
  if lo > hi or weighted(prev, hi) > room then
    return nil
  end
  while lo < hi do
    local mid = lo + math.floor((hi - lo) / 2)
    if weighted(prev, mid) <= room then
      hi = mid
    else
      lo = mid + 1
    end
  end
  return lo
end

-- sliding_retry returns how long after elapsed time e a request of cost
-- (cost <= rate) first fits: limiter.slidingRetry.
local function sliding_retry(prev, curr, e)
  local room = rate - curr - cost
  if room >= 0 then
    local at = first_fit(prev, room, e + 1)
    if at then
      return at - e
    end
  end
  local next_window = period - e
  local at = first_fit(curr, rate - cost, 0)
  if at then
    return next_window + at
  end
  return next_window + period
end

local s = read_hash('a', 'prev', 'curr')
local start = t - math.fmod(t, period)
local prev, curr = s[2], s[3]
if start == s[1] then -- the same window
elseif start < s[1] then -- the clock went back: stay in the newer window
  start, t = s[1], s[1]
elseif start == s[1] + period then
  prev, curr = curr, 0
else
  prev, curr = 0, 0
end
local e = t - start
-- A clock gone back within the window weighs the previous window more and
-- can push the estimate past the rate: stay at the rate then.
local used = math.min(weighted(prev, e) + curr, rate)

local allowed, retry = 0, 0
if cost > rate then
  retry = NEVER
elseif used + cost <= rate then
  allowed = 1
  curr = curr + cost
  used = used + cost
else
  retry = sliding_retry(prev, curr, e)
end
local reset = 0
if curr > 0 then
  reset = start + 2 * period - t
elseif prev > 0 then
  reset = start + period - t
end

if allowed == 1 then
  save_hash(reset, 'a', int(start), 'prev', int(prev), 'curr', int(curr))
end
return {allowed, rate, math.max(rate - used, 0), retry, reset}
