-- lease.lua: concurrency leases (store.Leaser), after lib.lua; then
-- lease_acquire.lua, lease_release.lua or lease_renew.lua. The decision is
-- store.Concurrency.Decide, the reference, which the memory store runs in
-- Go; every write below keeps the key's count and its leases in step.
--
-- KEYS[1] is a sorted set: one member per lease, "<cost>:<id>", scored by
-- the microsecond from which it no longer counts (acquired or renewed at
-- t, it counts while now < t + ttl); and the member "#", scored by minus
-- the leases' total cost, so that a decision reads the count without
-- reading every lease. "#" scores at most 0 and a lease at least 2, so the
-- expired leases are the range (0, now], each read once, when it expires.
-- A key holding no lease is deleted. With Redis TIME the key's TTL is its
-- latest lease's expiry, so Redis forgets the key of a dead instance's
-- leases by itself.
--
-- ARGV[1] is now in µs, or -1: read Redis TIME and give the key a TTL.
-- Numbers go to Redis as '%d' strings (Lua would print them in 14 digits).

local key = KEYS[1]
local TOTAL = '#'
local t, expire = decision_time(tonumber(ARGV[1]))

-- cost_of returns the cost of a lease member.
local function cost_of(member)
  return tonumber(string.match(member, '^(%d+):')) or 0
end

-- The leases' total. A key of another type (a rate rule's, had names been
-- reused across namespaces) holds no leases: it is deleted.
local total = redis.pcall('ZSCORE', key, TOTAL)
if type(total) == 'table' and total.err then
  redis.call('DEL', key)
  total = 0
else
  total = -(tonumber(total) or 0)
end

-- The leases that expired at t no longer count.
local changed = false
local expired = redis.call('ZRANGEBYSCORE', key, '(0', fmt('%d', t))
if #expired > 0 then
  for i = 1, #expired do
    total = total - cost_of(expired[i])
  end
  redis.call('ZREMRANGEBYSCORE', key, '(0', fmt('%d', t))
  changed = true
end

-- store writes the total back, with the key's TTL; or deletes the key
-- when no lease is left.
local function store()
  if total <= 0 then
    redis.call('DEL', key)
    return
  end
  redis.call('ZADD', key, fmt('%d', -total), TOTAL)
  if expire then
    local last = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
    redis.call('PEXPIRE', key, ttl_ms(last[2] - t))
  end
end
