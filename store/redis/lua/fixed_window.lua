-- fixed_window: limiter.fixedWindow (limiter/window.go). The hash holds
-- a = window start (µs), b = count.

local s = read_hash('a', 'b')
local start = t - math.fmod(t, period)
local count = 0
if start == s[1] then
  count = s[2]
elseif start < s[1] then -- the clock went back: keep counting in the newer window
  start, t, count = s[1], s[1], s[2]
end
local window_end = start + period

local allowed, retry = 0, 0
if cost > rate then
  retry = NEVER
elseif count + cost <= rate then
  count = count + cost
  allowed = 1
else
  retry = window_end - t
end
local reset = 0
if count > 0 then
  reset = window_end - t
end

if allowed == 1 then
  save_hash(reset, 'a', int(start), 'b', int(count))
end
return {allowed, rate, rate - count, retry, reset}
