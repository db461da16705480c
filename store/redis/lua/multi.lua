-- multi.lua: decides the rules of one HTTP request together, all or
-- nothing, in one script call. The script is lib.lua, then for every
-- algorithm a function decide[alg](key, cost, t, l1, l2, l3, queue) made
-- of state.lua and the algorithm's file, returning allowed, remaining,
-- retry, reset, refill, value (see common.lua), whether the state was
-- rebased (state.lua), and held_at and held_level (common.lua's reply),
-- then this file. sliding_log's value
-- is instead a function(expire) that writes its list
-- (sliding_log_write.lua): its decision itself writes nothing.
--
-- KEYS     one distinct key per rule
-- ARGV[1]  the time as common.lua's now (µs, or -1 for Redis TIME), then
--          per key seven doubles: the algorithm (limiter.Algorithm), the
--          cost, 1 if the rule enforces (0: shadow), and the limit's three
--          numbers and queue as in common.lua. A request held for its turn
--          is allowed.
--
-- If every enforcing rule allows, every allowed rule stores its new state
-- (a shadow rule's denial stops nothing). Otherwise nothing is spent: the
-- rules that deny answer their denial, the others what a look (cost 0)
-- answers, which reads the unchanged key again; only a state rebased under
-- a changed limit is stored, as a single rule's would be.
--
-- Reply: seven doubles per key, as common.lua's, in the order of KEYS.

local args = ARGV[1]
local t, expire = decision_time(struct.unpack('>d', args))
local decisions, values, rebased = {}, {}, {}
local pass = true
for i = 1, #KEYS do
  local alg, cost, enforce, l1, l2, l3, queue = struct.unpack('>ddddddd', args, 56 * i - 47)
  local allowed, remaining, retry, reset, refill, value, rebase, held_at, held_level =
    decide[alg](KEYS[i], cost, t, l1, l2, l3, queue)
  if allowed == 0 and enforce == 1 then
    pass = false
  end
  decisions[i] = { allowed, remaining, retry, reset, refill, value, rebase, held_at, held_level }
  values[i], rebased[i] = value, rebase
end

local replies = {}
for i = 1, #KEYS do
  local d = decisions[i]
  if pass then
    local v = values[i]
    if type(v) == 'function' then
      v(expire)
    elseif v then
      save(KEYS[i], v, d[4], expire)
    end
  else
    local v = values[i]
    if d[1] == 1 then
      local alg, _, _, l1, l2, l3, queue = struct.unpack('>ddddddd', args, 56 * i - 47)
      d = { decide[alg](KEYS[i], 0, t, l1, l2, l3, queue) }
      v = d[6]
    end
    if rebased[i] then
      save(KEYS[i], v, d[4], expire)
    end
  end
  replies[i] = struct.pack('>ddddddd', d[1], d[2], d[3], d[4], d[5], d[8], d[9])
end
return table.concat(replies)
