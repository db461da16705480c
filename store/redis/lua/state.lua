-- state.lua: reads the state of every algorithm but sliding_log. The key is
-- a string of two fields, or three for sliding_window, each a big-endian
-- IEEE-754 double (struct.pack('>dd')): exact for the integers below 2^53
-- the scripts keep, and read back with no parsing. s1, s2 and s3 are the
-- fields, 0 for a missing field or key, and width is how many there are.
--
-- A key that is no string is an older version's hash (fields a and b, or
-- a, prev and curr for sliding_window), read as the same fields, or a
-- sliding_log list (the rule's algorithm changed), deleted: a fresh state.

local s1, s2, s3, width = 0, 0, 0, 0
local v = redis.pcall('GET', key)
if type(v) == 'string' then
  if #v == 16 then
    s1, s2 = struct.unpack('>dd', v)
    width = 2
  elseif #v == 24 then
    s1, s2, s3 = struct.unpack('>ddd', v)
    width = 3
  end
elseif v then -- an error: WRONGTYPE
  local h = redis.pcall('HMGET', key, 'a', 'b', 'prev', 'curr')
  if h.err then
    redis.call('DEL', key)
  elseif h[3] or h[4] then
    s1, s2, s3, width = tonumber(h[1]) or 0, tonumber(h[3]) or 0, tonumber(h[4]) or 0, 3
  else
    s1, s2, width = tonumber(h[1]) or 0, tonumber(h[2]) or 0, 2
  end
end
