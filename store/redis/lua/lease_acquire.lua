-- lease_acquire.lua: Leaser.Acquire (after lib.lua and lease.lua).
--
-- ARGV[2] cost  0 <= cost <= max+1 (the store sends any cost above the
--               limit as max+1: each is denied alike)
-- ARGV[3] max   the limit, 1 to 2^50
-- ARGV[4] ttl   the lease's life, µs
-- ARGV[5] id    the lease's ID, unique across instances
--
-- Reply: {allowed (0 or 1), the total in flight after the decision}. The
-- caller knows the rest: a denied cost above max never fits, another waits.

local cost, max, ttl = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local allowed = 0
if total <= max - cost then -- a cost above max never fits: max - cost < 0
  allowed = 1
  if cost > 0 then
    redis.call('ZADD', key, fmt('%d', t + ttl), fmt('%d', cost) .. ':' .. ARGV[5])
    total = total + cost
    changed = true
  end
end
if changed then
  store()
end
return {allowed, total}
