-- cancel.lua: limiter.Limit.Cancel, giving back the reservation of a
-- request held for its turn whose caller left. The script is lib.lua,
-- these lines, state.lua (which reads the key under the limit) and
-- cancel_end.lua.
--
-- KEYS[1]  the bucket's key
-- ARGV[1]  seven doubles: the algorithm (limiter.Algorithm), the limit's
--          burst, p and n (as common.lua's l1, l2, l3), the held request's
--          cost, and its reservation (limiter.Reservation): the time of its
--          decision (µs) and the level just after it (units).
--
-- Reply: 1 if the cost was given back, 0 if not (the reservation is not
-- the key's last, the key is gone or is under another limit).

local key = KEYS[1]
local alg, l1, l2, l3, cost, r_at, r_level = struct.unpack('>ddddddd', ARGV[1])
