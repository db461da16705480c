-- grant_return.lua: gives back the unused units of a quota grant
-- (grant.go) when it ends. The script is lib.lua, the algorithm's name,
-- settle_head.lua, state.lua and settle.lua (limiter.Settle's refund of a
-- grant reserved at its size and settled at the units it admitted), then
-- this file, which writes the refunded state as settle_end.lua does,
-- keeping the key's TTL, and replies 1 if the units went back, 0 if not:
-- a window that has ended, a bucket spent by another request since, a key
-- gone or under another limit.

if changed then
  redis.call('SET', key, settled_state(alg, n1, n2, n3, tag), 'KEEPTTL')
  return 1
end
return 0
