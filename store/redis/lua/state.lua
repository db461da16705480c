-- state.lua: reads the state of every algorithm but sliding_log. The key is
-- a string of big-endian IEEE-754 doubles (struct.pack): exact for the
-- integers below 2^53 the scripts keep, and read back with no parsing.
-- First the state's two fields (three for sliding_window), s1, s2 and s3
-- (0 for a missing key), then the limit it was written under: the
-- algorithm (limiter.Algorithm) and the limit's three numbers as
-- common.lua's l1, l2 and l3, here w1, w2 and w3.
--
-- An algorithm leaves the fields in value; the limit, tag, is appended
-- when the key is written (save.lua, or multi.lua's decide).
--
-- A state written under another limit of the same algorithm is rebased:
-- the algorithm reinterprets it under the new limit first
-- (limiter.Reinterpret), and its state is written even if the request is
-- denied. Another algorithm's state (a string of other fields, a
-- sliding_log list) reads as a fresh state; a list is deleted.

local tag = struct.pack('>dddd', alg, l1, l2, l3)
local s1, s2, s3 = 0, 0, 0
local rebase, w1, w2, w3 = false, 0, 0, 0
local v = redis.pcall('GET', key)
if type(v) == 'string' then
  local written
  if #v == 48 then
    s1, s2, written, w1, w2, w3 = struct.unpack('>dddddd', v)
  elseif #v == 56 then
    s1, s2, s3, written, w1, w2, w3 = struct.unpack('>ddddddd', v)
  end
  if written ~= alg then
    s1, s2, s3 = 0, 0, 0
  else
    rebase = w1 ~= l1 or w2 ~= l2 or w3 ~= l3
  end
elseif v then -- an error: WRONGTYPE, a sliding_log list
  redis.call('DEL', key)
end
