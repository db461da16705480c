-- settle_end.lua: writes the settled state (settle.lua's n1, n2, n3, with
-- the limit's tag) once the algorithm's file has decided the look on it,
-- and replies with the look. The windows and a refund keep the key's TTL
-- (the state ends no later than it did); a bucket's charge gives it the
-- look's Reset, like save.lua.

if changed then
  local state = settled_state(alg, n1, n2, n3, tag)
  if alg >= 4 and charge > 0 and expire and reset > 0 then
    save(key, state, reset, expire)
  else
    redis.call('SET', key, state, 'KEEPTTL')
  end
end
return struct.pack('>ddddddd', allowed, remaining, retry, reset, refill, 0, 0)
