-- lease_renew.lua: Leaser.Renew of a key's leases (after lib.lua and
-- lease.lua).
--
-- ARGV[2], ARGV[3], ...: pairs of a lease's member, "<cost>:<id>", and its
-- TTL in µs.
--
-- A lease still held counts until t + ttl from now on, or longer if it did
-- already (a renewal at a time gone back never shortens a lease).
-- Reply: one integer per lease, 1 if it was still held (and renewed), 0 if
-- it had expired or been released.

local kept = {}
for i = 2, #ARGV, 2 do
  local at = redis.call('ZSCORE', key, ARGV[i])
  if at then
    local want = t + tonumber(ARGV[i + 1])
    if want > tonumber(at) then
      redis.call('ZADD', key, 'XX', fmt('%d', want), ARGV[i])
      changed = true
    end
    kept[#kept + 1] = 1
  else
    kept[#kept + 1] = 0
  end
end
if changed then
  store()
end
return kept
