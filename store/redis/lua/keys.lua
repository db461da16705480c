-- keys.lua: ends the script that decides requests on several keys of one
-- hash slot in one call (keys.go), each exactly as its own call of the
-- algorithm's script would, all at one Redis time (keys_time.lua): the
-- script is lib.lua, keys_time.lua, then a function
-- decide_one(KEYS, ARGV) made of what that script is (common.lua,
-- state.lua, the algorithm, save.lua: it reads KEYS[1] and ARGV[1],
-- writes the key and returns the reply), then this file. A key named
-- twice is decided twice, the second time on what the first wrote.
--
-- KEYS[i]  the i-th request's key
-- ARGV[i]  its request, as common.lua's ARGV[1]
--
-- Reply: one element per request, in order: its seven doubles, or the
-- error its decision raised (the others are decided all the same, as
-- their own calls would have been).

-- decide_one reads only KEYS[1] and ARGV[1]: one pair of tables serves
-- every request.
local out, keys, argv = {}, {}, {}
for i = 1, #KEYS do
  keys[1], argv[1] = KEYS[i], ARGV[i]
  local ok, r = pcall(decide_one, keys, argv)
  if ok then
    out[i] = r
  else
    if type(r) == 'table' and r.err then
      r = r.err
    end
    out[i] = { err = tostring(r) }
  end
end
return out
