-- settle.lua: limiter.settle for the states state.lua reads (every
-- algorithm but sliding_log). A key missing, or held under another limit
-- (rebase), is left as it is. The settled state is written by
-- settle_end.lua, once the look has run.

local changed = false
if v and not rebase and (refund > 0 or charge > 0) then
  if alg == 1 or alg == 2 then -- fixed_window, sliding_window
    local rate, period = l1, l2
    local w = r_at - math.fmod(r_at, period)
    local function adjust(count)
      changed = true
      if refund > 0 then
        return count - math.min(refund, count)
      elseif count >= rate then
        return count
      end
      return math.min(count + charge, rate)
    end
    if alg == 1 and s1 == w then
      s2 = adjust(s2)
    elseif alg == 2 and s1 == w then
      s3 = adjust(s3)
    elseif alg == 2 and s1 == w + period then
      s2 = adjust(s2)
    end
  elseif refund > 0 then -- the buckets: limiter.refundBucket
    local burst, p, n = l1, l2, l3
    local need = refund * p
    -- splice: bucket_refund.lua
    if refundable then
      changed = true
      s1, s2 = g1, g2
    end
  else -- a charge at t: limiter.chargeTokens, chargeLevel, chargeGCRA
    local burst, p, n = l1, l2, l3
    local capacity = burst * p
    local level, last = 0, 0 -- the used part of the bucket at last
    if alg == 4 then
      level, last = capacity - s1, s2
    elseif alg == 6 then
      level, last = s1, s2
    elseif t >= s1 then -- gcra: time, level
      level, last = drain(s2, t - s1, n), t
    elseif s1 - t >= floor((capacity - s2 + n - 1) / n) then
      level, last = capacity, t
    else
      level, last = s2 + (s1 - t) * n, t
    end
    if last ~= 0 and t > last then
      level, last = drain(level, t - last, n), t
    end
    if last ~= 0 and level > 0 and level < capacity then
      changed = true
      level = math.min(level + charge * p, capacity)
      if alg == 4 then
        s1, s2 = capacity - level, last
      else
        s1, s2 = level, last -- leaky_bucket: level, time; gcra: time, level
        if alg == 5 then
          s1, s2 = last, level
        end
      end
    end
  end
end
local n1, n2, n3 = s1, s2, s3
