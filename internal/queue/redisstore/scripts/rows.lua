-- rows: read a queue's rows of some minutes (roll.lua's), in one step.
--
-- KEYS the rows ({q}:minute:<ms>), alone: the script names none of the
--      queue's keys
-- Reply: for each row in KEYS' order, its fields and values as HGETALL
--        answers them ({} for a row not kept)
local reply = {}
for i = 1, #KEYS do
  reply[i] = redis.call('HGETALL', KEYS[i])
end
return reply
