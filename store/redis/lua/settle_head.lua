-- settle_head.lua: reads the request of a settle script, which settles a
-- reservation at its actual cost (limiter.Settle) and replies with what a
-- look at the key sees afterwards. The script is lib.lua, the algorithm's
-- name, this file, then for every algorithm but sliding_log state.lua and
-- settle.lua, for sliding_log settle_log.lua, then the algorithm's own file
-- (deciding a look, cost 0, on the settled state) and settle_end.lua.
--
-- KEYS[1]  the limiter key
-- ARGV[1]  nine doubles: now (µs, or -1: Redis TIME), the limit as
--          common.lua's l1, l2, l3 and queue, the reservation
--          (limiter.Reservation: its time in µs and the state's level or
--          count after it), the reserved cost and the actual cost.
--
-- Reply: as common.lua's, the look's decision.

local key = KEYS[1]
local t, l1, l2, l3, queue, r_at, r_level, reserved, actual = struct.unpack('>ddddddddd', ARGV[1])
local expire
t, expire = decision_time(t)
local cost = 0
local allowed, remaining, retry, reset, refill, held_at, held_level = 0, 0, 0, 0, 0, 0, 0
local value, reply

-- limiter.settle's refund and charge, each at most a whole burst (the
-- rate for the windows).
local refund, charge = 0, 0
if reserved > 0 and r_at > 0 and actual ~= reserved then
  if actual < 0 then
    actual = 0
  end
  refund, charge = math.min(math.max(reserved - actual, 0), l1), math.min(math.max(actual - reserved, 0), l1)
end
local settle_t = t -- the algorithm's file may move t (a clock gone back)
