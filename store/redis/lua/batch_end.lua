-- batch_end.lua: see batch_begin.lua. The next request sees the state the
-- last one left, as state.lua would have read it from the key: value's
-- numbers, or a fresh state where save.lua would have deleted the key.
  replies[i] = struct.pack('>dddd', allowed, remaining, retry, reset)
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
end
value, reset = saved, saved_reset
reply = table.concat(replies)
