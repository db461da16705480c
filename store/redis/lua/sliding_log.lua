-- sliding_log: limiter.slidingLog (limiter/log.go). The key is a list: the
-- total cost of the entries, then the admitted requests oldest first, two
-- elements each, the time (µs) and the cost:
--   [total, at1, cost1, at2, cost2, ...]
-- It holds at most rate entries (entries of the same microsecond are
-- merged). Keeping the total in the head lets a decision read only the
-- newest entry and the entries that expire (each once), instead of the
-- whole log: a hot key with a large rate must not stall Redis.

local rate, period = l1, l2
-- Reading the list costs Redis about as much per element as a call, so a
-- decision reads little: first the head, the total and the HEAD oldest
-- entries (for a short log the whole of it), then, for a longer one, its
-- length and newest entry, and CHUNK entries at a time as far as entries
-- expire (or a retry must look).
local HEAD, CHUNK = 4, 32

local head = redis.pcall('LRANGE', key, 0, 2 * HEAD)
if head.err then -- a string or hash left by a rule whose algorithm changed
  redis.call('DEL', key)
  head = {}
end
local size, total = 0, 0 -- entries and their total cost
local newest_at, newest_cost = 0, 0
local len = #head
if len >= 3 then
  total = head[1] + 0
  if len <= 2 * HEAD then
    size = floor((len - 1) / 2)
    newest_at, newest_cost = head[len - 1] + 0, head[len] + 0
  else -- maybe longer
    size = floor((redis.call('LLEN', key) - 1) / 2)
    local newest = redis.call('LRANGE', key, -2, -1)
    newest_at, newest_cost = newest[1] + 0, newest[2] + 0
  end
end

-- entry returns the time and cost of the i-th oldest entry, from the head
-- or reading the list CHUNK entries at a time. Entry i is
-- chunk[off + 2*(i - chunk_first) + 1 and + 2], off 1 in the head (whose
-- first element is the total).
local chunk, chunk_first, chunk_size, off = head, 1, floor((len - 1) / 2), 1
local function entry(i)
  if i < chunk_first or i >= chunk_first + chunk_size then
    chunk = redis.call('LRANGE', key, 2 * i - 1, 2 * (i + CHUNK - 1))
    chunk_first, chunk_size, off = i, #chunk / 2, 0
  end
  local j = off + 2 * (i - chunk_first)
  return chunk[j + 1] + 0, chunk[j + 2] + 0
end

-- log_retry is limiter.logRetry: how long after t until enough of the
-- entries first to last, oldest first, expire to free excess; nil if they
-- cannot.
local function log_retry(first, last, excess)
  local freed = 0
  for i = first, last do
    local at, c = entry(i)
    freed = freed + c
    if freed >= excess then
      return at + period - t
    end
  end
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
local oldest_at -- the oldest entry that still counts, if any
while expired < size do
  local at, c = entry(expired + 1)
  if at + period > t then
    oldest_at = at
    break
  end
  expired = expired + 1
  used = used - c
end

local live = size > expired -- whether the newest entry still counts
if cost > rate then
  retry = NEVER
elseif used + cost <= rate or cost == 0 then -- entries kept from a higher rate deny no look
  allowed = 1
  used = used + cost
  if cost > 0 then -- the reservation, for Settle: its entry's time
    held_at, held_level = t, used
  end
else
  -- How long until enough of the oldest live entries expire to free the
  -- excess (period: unreachable while cost <= rate).
  retry = log_retry(expired + 1, size, used + cost - rate) or period
end
if allowed == 1 and cost > 0 then
  reset = period
elseif live then
  reset = newest_at + period - t
end
remaining = rate - used
-- The oldest entry frees its cost first (the request's own, if it is the
-- only one).
if used > rate then
  -- Entries kept from a higher rate (limiter.Reinterpret) must expire down
  -- to the rate first, as logRetry computes for cost 1; a denial added none.
  refill = log_retry(expired + 1, size, used - rate + 1) or refill
elseif oldest_at then
  refill = oldest_at + period - t
elseif allowed == 1 and cost > 0 then
  refill = period
end
if remaining < 0 then -- entries kept from a higher rate
  remaining = 0
end
