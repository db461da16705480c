-- batch_state.lua: in a batch (batch_begin.lua) of an algorithm whose
-- state is a string (all but sliding_log, which reads its list again on
-- every request), the next request sees the state this one left, as
-- state.lua would have read it from the key: value's fields (the key's
-- without the limit, which is the batch's: a rebased state is rebased by
-- the first request), or a fresh state where save.lua would have deleted
-- the key. The key is
-- written once, after the batch, with the state of the last request that
-- changed it.
  if value then
    saved, saved_reset = value, reset
    if reset == 0 then
      s1, s2, s3 = 0, 0, 0
    elseif #value == 24 then
      s1, s2, s3 = struct.unpack('>ddd', value)
    else
      s1, s2 = struct.unpack('>dd', value)
    end
  end
  rebase = false
