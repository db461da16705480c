-- save.lua: stores the state of an allowed request, value (lib.lua's
-- save); a denied request leaves value nil: it changes nothing. Then
-- replies with the decision, or with the decisions of a batch
-- (batch_end.lua).

if value then
  save(key, value, reset, expire)
end
return reply or struct.pack('>ddddd', allowed, remaining, retry, reset, refill)
