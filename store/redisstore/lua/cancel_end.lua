-- cancel_end.lua: the end of cancel.lua, after state.lua. The key's state
-- still ends where the reservation left it if at*n + level (the point
-- the bucket drains to, which only spending moves on) is the reservation's
-- r_at*n + r_level; compared as level - r_level = (r_at - at)*n, exact
-- whenever it can hold (both levels are below 2^53).

local burst, p, n = l1, l2, l3
local need = cost * p
local level, at = s1, s2 -- leaky_bucket
if alg == 4 then -- token_bucket: tokens, time
  level = burst * p - s1
elseif alg == 5 then -- gcra: time, level (see gcra.lua)
  level, at = s2, s1
end
local dt = r_at - at
if rebase or at == 0 or cost < 1 or cost > burst or r_level < need or r_at < 1 or
    math.abs(dt) > floor(9007199254740992 / n) or level - r_level ~= dt * n or
    alg ~= 5 and level < need then
  return 0
end
local value
if alg == 4 then
  value = struct.pack('>dd', s1 + need, s2)
elseif alg == 5 then
  value = struct.pack('>dd', r_at, r_level - need)
else
  value = struct.pack('>dd', s1 - need, s2)
end
redis.call('SET', key, value .. tag, 'KEEPTTL')
return 1
