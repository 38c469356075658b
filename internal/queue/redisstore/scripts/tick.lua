-- tick: read what one admission tick needs (queue.TickInput), in one step,
-- for queue.PlanTick to decide in Go; front.lua reads the line's front as
-- the plan needs it, and admit.lua applies the plan. Changes nothing.
--
-- KEYS the queue's (prelude)
-- Reply: {-1} unknown queue, else
--        {now, length, live tokens, the config list (prelude), TICK of the
--        admission hash...}
local _, list, refused = config()
if refused then
  return refused
end
local now = clock()
local reply = {now, redis.call('ZCARD', K.line), redis.call('ZCOUNT', K.texp, '(' .. now, '+inf')}
return append(append(reply, list), redis.call('HMGET', K.adm, unpack(TICK)))
