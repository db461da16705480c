-- sliding_log: limiter.slidingLog (limiter/log.go). The key is a list: the
-- total cost of the entries, then the admitted requests oldest first, two
-- elements each, the time (µs) and the cost:
--   [total, at1, cost1, at2, cost2, ...]
-- It holds at most rate entries (entries of the same microsecond are
-- merged). Keeping the total in the head lets a decision read only the
-- newest entry and the entries that expire (each once), instead of the
-- whole log: a hot key with a large rate must not stall Redis.

local CHUNK = 32 -- entries read per LRANGE when scanning from the oldest

local size, total = 0, 0 -- entries and their total cost
local newest_at, newest_cost = 0, 0
local len = redis.pcall('LLEN', key)
if type(len) ~= 'number' then -- a hash left by a rule whose algorithm changed
  redis.call('DEL', key)
  len = 0
end
if len >= 3 then
  size = math.floor((len - 1) / 2)
  total = tonumber(redis.call('LINDEX', key, 0))
  local newest = redis.call('LRANGE', key, -2, -1)
  newest_at, newest_cost = tonumber(newest[1]), tonumber(newest[2])
end

-- entry returns the time and cost of the i-th oldest entry, reading the
-- list CHUNK entries at a time.
local chunk_first, chunk = 1, {}
local function entry(i)
  if i < chunk_first or i >= chunk_first + #chunk / 2 then
    chunk_first = i
    chunk = redis.call('LRANGE', key, 2 * i - 1, 2 * (i + CHUNK - 1))
  end
  local j = 2 * (i - chunk_first)
  return tonumber(chunk[j + 1]), tonumber(chunk[j + 2])
end

if size > 0 and t < newest_at then -- the clock went back
  t = newest_at
end
-- An entry made at time a counts while t < a + period. The entries are in
-- time order, so the expired ones are the oldest.
local expired, used = 0, total
if size > 0 and newest_at + period <= t then -- all of them: no need to look
  expired, used = size, 0
end
while expired < size do
  local at, c = entry(expired + 1)
  if at + period > t then
    break
  end
  expired = expired + 1
  used = used - c
end

-- log_retry returns how long until enough of the oldest live entries
-- expire to free excess units: limiter.logRetry.
local function log_retry(excess)
  local freed = 0
  for i = expired + 1, size do
    local at, c = entry(i)
    freed = freed + c
    if freed >= excess then
      return at + period - t
    end
  end
  return period -- unreachable while cost <= rate
end

local allowed, retry = 0, 0
local live = size > expired -- whether the newest entry still counts
if cost > rate then
  retry = NEVER
elseif used + cost <= rate then
  allowed = 1
  used = used + cost
else
  retry = log_retry(used + cost - rate)
end
local reset = 0
if allowed == 1 and cost > 0 then
  reset = period
elseif live then
  reset = newest_at + period - t
end

if allowed == 1 then
  if reset == 0 then
    redis.call('DEL', key)
  elseif not live then -- cost > 0: a log of this one entry
    redis.call('DEL', key)
    redis.call('RPUSH', key, int(used), int(t), int(cost))
  else
    if expired > 0 then -- drop them, keeping one element to hold the total
      redis.call('LTRIM', key, 2 * expired, -1)
    end
    if cost > 0 and newest_at == t then -- merge with the same microsecond
      redis.call('LSET', key, -1, int(newest_cost + cost))
    elseif cost > 0 then
      redis.call('RPUSH', key, int(t), int(cost))
    end
    redis.call('LSET', key, 0, int(used))
  end
  set_expiry(reset)
end
return {allowed, rate, rate - used, retry, reset}
