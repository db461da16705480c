-- save.lua: stores the state of an allowed request, value, with a TTL of
-- its Reset rounded up to a whole millisecond (once Reset has passed the
-- state cannot change a decision); or, when Reset is 0 and the state is as
-- good as a fresh one, deletes the key. A denied request leaves value nil:
-- it changes nothing. Then replies with the decision, or with the
-- decisions of a batch (batch_end.lua).

if value then
  if reset == 0 then
    redis.call('DEL', key)
  elseif expire then
    local ms = floor((reset + 999) / 1000)
    if ms < 1 then
      ms = 1
    end
    redis.call('SET', key, value, 'PX', fmt('%d', ms))
  else
    redis.call('SET', key, value)
  end
end
return reply or struct.pack('>dddd', allowed, remaining, retry, reset)
