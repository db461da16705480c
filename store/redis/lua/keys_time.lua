-- keys_time.lua: follows lib.lua in the keys script (keys.lua): the
-- requests of one call are decided at one Redis time, read once, as a
-- batch on one key decides its requests (batch_begin.lua). Each is still
-- decided exactly as its own call would have been at that time; what it
-- spares is a TIME call per request, a third of the Redis commands a
-- request on a fresh key makes (TIME, GET, SET).

local call_time
local lib_decision_time = decision_time
local function decision_time(t)
  if t ~= -1 then
    return lib_decision_time(t)
  end
  if not call_time then
    call_time = lib_decision_time(t)
  end
  return call_time, true
end
