-- cancel_end.lua: the end of cancel.lua, after state.lua: gives the
-- reservation back if the key's state still ends where it left it
-- (bucket_refund.lua) and the bucket holds all of it.

local burst, p, n = l1, l2, l3
local need = cost * p
-- splice: bucket_refund.lua
if rebase or not refundable or cost < 1 or cost > burst or r_at < 1 or alg ~= 5 and level < need then
  return 0
end
redis.call('SET', key, struct.pack('>dd', g1, g2) .. tag, 'KEEPTTL')
return 1
