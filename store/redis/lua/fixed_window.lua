-- fixed_window: limiter.fixedWindow (limiter/window.go). The state
-- (state.lua) is s1 = window start (µs), s2 = count.

local rate, period = l1, l2
if width == 3 then -- sliding_window's (the rule's algorithm changed): fresh
  s1, s2 = 0, 0
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
elseif count + cost <= rate then
  count = count + cost
  allowed = 1
else
  retry = window_end - t
end
if count > 0 then -- all of it comes back at once, at the window's end
  reset = window_end - t
  refill = reset
end
remaining = rate - count

if allowed == 1 then
  value = struct.pack('>dd', start, count)
end
