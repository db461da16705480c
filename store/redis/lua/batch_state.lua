-- batch_state.lua: in a batch (batch_begin.lua) of an algorithm whose
-- state is a string (all but sliding_log, which reads its list again on
-- every request), the next request sees the state this one left, as
-- state.lua would have read it from the key: value's numbers, or a fresh
-- state where save.lua would have deleted the key. The key is written once,
-- after the batch, with the state of the last request that changed it.
  if value then
    saved, saved_reset = value, reset
    if reset == 0 then
      s1, s2, s3, width = 0, 0, 0, 0
    elseif #value == 24 then
      s1, s2, s3 = struct.unpack('>ddd', value)
      width = 3
    else
      s1, s2 = struct.unpack('>dd', value)
      width = 2
    end
  end
