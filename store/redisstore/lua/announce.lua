-- An instance's heartbeat: KEYS[1] is the store's instances hash
-- (<prefix>instances:{instances}); ARGV[1] the instance's id, ARGV[2]
-- what it announces, ARGV[3] its TTL in ms. Each field is
-- "<expiry ms> <seen ms> <announcement>", in Redis TIME: the one clock
-- of every instance. Expired fields are dropped; the hash lives until its
-- latest expiry.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[3])
redis.call('HSET', KEYS[1], ARGV[1], string.format('%d %d %s', now + ttl, now, ARGV[2]))
local latest = now + ttl
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  local expiry = tonumber(string.match(all[i + 1], '^(%d+) '))
  if expiry == nil or expiry <= now then
    redis.call('HDEL', KEYS[1], all[i])
  elseif expiry > latest then
    latest = expiry
  end
end
redis.call('PEXPIRE', KEYS[1], latest - now)
return now
