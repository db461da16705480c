-- The instances announced (announce.lua) and not expired: the time now
-- (Redis TIME, ms), then each instance's id and "<expiry> <seen> <announcement>".
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {now}
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local expiry = tonumber(string.match(all[i + 1], '^(%d+) '))
  if expiry ~= nil and expiry > now then
    out[#out + 1] = all[i]
    out[#out + 1] = all[i + 1]
  end
end
return out
