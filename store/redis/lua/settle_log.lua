-- settle_log.lua: limiter.settleLog on a sliding_log list (see
-- sliding_log.lua): the reservation's entry, the one made at r_at, loses
-- the refund (and is removed at 0) or takes the charge, up to the rate
-- in the log; the total in the head follows. An entry no longer in the
-- list leaves it as it is. The list keeps its TTL: a refund frees, and a
-- charge lands on an entry whose time the TTL already covers.

if refund > 0 or charge > 0 then
  local len = redis.pcall('LLEN', key)
  if type(len) == 'number' and len >= 3 then
    -- Entries are in time order; the reservation is most likely among the
    -- newest: read back from the end, 32 entries at a time.
    local last = (len - 1) / 2 -- entries 1..last; entry i is at 2i-1, 2i
    local i, found = last, nil
    while i >= 1 and not found do
      local from = math.max(i - 31, 1)
      local chunk = redis.call('LRANGE', key, 2 * from - 1, 2 * i)
      for j = i, from, -1 do
        local at = chunk[2 * (j - from) + 1] + 0
        if at == r_at then
          found = j
          break
        elseif at < r_at then
          i = 0
          break
        end
      end
      if i > 0 and not found then
        i = from - 1
      end
    end
    if found then
      local total = redis.call('LINDEX', key, 0) + 0
      local c = redis.call('LINDEX', key, 2 * found) + 0
      local k
      if refund > 0 then
        k = -math.min(refund, c)
      else
        k = math.min(charge, math.max(l1 - total, 0))
      end
      if k ~= 0 then
        redis.call('LSET', key, 0, fmt('%d', total + k))
        if c + k == 0 then -- remove the entry: mark both elements, then drop them
          redis.call('LSET', key, 2 * found - 1, 'x')
          redis.call('LSET', key, 2 * found, 'x')
          redis.call('LREM', key, 2, 'x')
        else
          redis.call('LSET', key, 2 * found, fmt('%d', c + k))
        end
      end
    end
  end
end
