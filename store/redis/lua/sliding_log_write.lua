-- sliding_log_write.lua: writes what sliding_log.lua decided, for an
-- allowed request: drops the expired entries, appends the request (or
-- merges it with an entry of the same microsecond), keeps the total in the
-- head and gives the list a TTL of its Reset; deletes it when Reset is 0.
-- Split from the decision so that the multi-rule script (multi.lua) can
-- decide every rule first and write only if all of them allow.

if allowed == 1 then
  if reset == 0 then
    redis.call('DEL', key)
  elseif not live then -- cost > 0: a log of this one entry
    if len > 0 then
      redis.call('DEL', key)
    end
    redis.call('RPUSH', key, fmt('%d', used), fmt('%d', t), fmt('%d', cost))
  else
    if expired > 0 then -- drop them, keeping one element to hold the total
      redis.call('LTRIM', key, 2 * expired, -1)
    end
    if cost > 0 and newest_at == t then -- merge with the same microsecond
      redis.call('LSET', key, -1, fmt('%d', newest_cost + cost))
    elseif cost > 0 then
      redis.call('RPUSH', key, fmt('%d', t), fmt('%d', cost))
    end
    redis.call('LSET', key, 0, fmt('%d', used))
  end
  if reset > 0 and expire then
    redis.call('PEXPIRE', key, ttl_ms(reset))
  end
end
