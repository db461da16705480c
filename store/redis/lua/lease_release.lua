-- lease_release.lua: Leaser.Release (after lib.lua and lease.lua).
--
-- ARGV[2] the lease's member, "<cost>:<id>"
--
-- A lease still held is removed and its cost leaves the total; an expired
-- one went already, and a released one is not there: nothing changes.
-- Reply: 1 if the lease was released now, else 0.

local released = 0
if redis.call('ZSCORE', key, ARGV[2]) then
  redis.call('ZREM', key, ARGV[2])
  total = total - cost_of(ARGV[2])
  released, changed = 1, true
end
if changed then
  store()
end
return released
