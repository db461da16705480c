-- keys.lua: ends the script that decides requests on several keys of one
-- hash slot in one call (keys.go), each exactly as its own call of the
-- algorithm's script would: the script is lib.lua, then a function
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

local out = {}
for i = 1, #KEYS do
  local ok, r = pcall(decide_one, { KEYS[i] }, { ARGV[i] })
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
