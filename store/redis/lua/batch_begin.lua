-- batch_begin.lua and batch_end.lua wrap an algorithm to decide a batch:
-- several requests on one key, made while another call on the key was in
-- flight, decided in one script call one after another at the same time,
-- each exactly as its own call would have been. The script is lib.lua,
-- common.lua, state.lua (but for sliding_log), this file, the algorithm,
-- batch_state.lua (but for sliding_log), batch_end.lua and save.lua.
--
-- ARGV[1] as for one request; its cost is the first request's.
-- ARGV[2] the costs of the other requests, one double each, in order.
--
-- Reply: the seven doubles of each request's decision, in order.

local more = ARGV[2] or ''
local replies = {}
local t_batch = t
local saved, saved_reset -- the state after the last request that changed it
for i = 1, 1 + #more / 8 do
  if i > 1 then
    cost = struct.unpack('>d', more, 8 * i - 15)
  end
  -- Every request starts from the batch's time (an algorithm moves t
  -- forward when the clock went back) and an undecided decision.
  t, allowed, remaining, retry, reset, refill, value = t_batch, 0, 0, 0, 0, 0, nil
  held_at, held_level = 0, 0
