-- fixed_window: limiter.fixedWindow (limiter/window.go). The state
-- (state.lua) is s1 = window start (µs), s2 = count.

local rate, period = l1, l2
if rebase and w2 ~= period and s2 > 0 then
  -- limiter.rebaseFixed: the count of the old window holding t (or its
  -- start, for a clock gone back) moves to the new window holding it.
  local at = t
  if at < s1 then
    at = s1
  end
  if at >= s1 + w2 then
    s1, s2 = 0, 0
  else
    s1 = at - math.fmod(at, period)
  end
end
local start = t - math.fmod(t, period)
local count = 0
if start == s1 then
  count = s2
elseif start < s1 then -- the clock went back: keep counting in the newer window
  start, t, count = s1, s1, s2
end
local window_end = start + period

if cost > rate then
  retry = NEVER
elseif count + cost <= rate or cost == 0 then -- a count kept from a higher rate denies no look
  count = count + cost
  allowed = 1
  if cost > 0 then -- the reservation, for Settle
    held_at, held_level = t, count
  end
else
  retry = window_end - t
end
if count > 0 then -- all of it comes back at once, at the window's end
  reset = window_end - t
  refill = reset
end
remaining = rate - count
if remaining < 0 then -- a count kept from a higher rate
  remaining = 0
end

if allowed == 1 then
  value = struct.pack('>dd', start, count)
elseif rebase then -- a denial changes nothing: the state as rebased, not as seen from t
  value = struct.pack('>dd', s1, s2)
end
