-- grant.lua: takes a quota grant on one key (store.redis.lease in the
-- configuration, grant.go): up to want units in one call, as one request
-- of that cost would spend them, or as many as the key has room for now
-- if that is fewer but at least need, the cost of the request that asked.
-- The script is lib.lua, a function decide(key, cost, t, l1, l2, l3,
-- queue) made of state.lua and the algorithm's file as multi.lua's
-- decide[alg], then this file. sliding_log and limits with a delay are
-- never granted (grant.go says why).
--
-- KEYS[1]  the limiter key
-- ARGV[1]  seven doubles: want, need (1 <= need <= want <= burst), now
--          (as common.lua's), and the limit's three numbers and queue (0)
--          as in common.lua
--
-- Reply: eight doubles: common.lua's seven, of the request that spent
-- the grant (or, when none fits, of a request of cost need, which is then
-- denied as it would be alone), and the units granted (0 when denied).
-- A denial at want spends nothing, so the second decision reads the same
-- state at the same time: its room (remaining) fits by construction.

local key = KEYS[1]
local want, need, t, l1, l2, l3, queue = struct.unpack('>ddddddd', ARGV[1])
local expire
t, expire = decision_time(t)
local granted = want
local allowed, remaining, retry, reset, refill, value, rebase, held_at, held_level =
  decide(key, want, t, l1, l2, l3, queue)
if allowed == 0 then
  granted = need
  if remaining >= need then
    granted = remaining
  end
  allowed, remaining, retry, reset, refill, value, rebase, held_at, held_level =
    decide(key, granted, t, l1, l2, l3, queue)
  if allowed == 0 then
    granted = 0
  end
end
if value then
  save(key, value, reset, expire)
end
return struct.pack('>dddddddd', allowed, remaining, retry, reset, refill, held_at, held_level, granted)
