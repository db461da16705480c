-- save.lua: stores the state of an allowed (or rebased) request, value,
-- followed by the limit it is under, tag (lib.lua's save, state.lua's
-- tag); a denied request leaves value nil: it changes nothing (sliding_log
-- writes its list itself and leaves value nil). Then replies with the
-- decision, or with the decisions of a batch (batch_end.lua).

if value then
  save(key, value .. tag, reset, expire)
end
return reply or struct.pack('>ddddddd', allowed, remaining, retry, reset, refill, held_at, held_level)
