-- batch_end.lua: closes the loop of batch_begin.lua, after
-- batch_state.lua for the string states, and leaves save.lua the state to
-- write (none for sliding_log, which wrote its list as it went) and the
-- replies.
  replies[i] = struct.pack('>ddddddd', allowed, remaining, retry, reset, refill, held_at, held_level)
end
value, reset = saved, saved_reset
reply = table.concat(replies)
