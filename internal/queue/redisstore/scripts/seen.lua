-- seen: mark users still in line as present now, for the no-show rule
-- (admission.PlanTick, abandon_ms). Instances batch the status polls of users
-- near the front and send them here about once a second.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV    user ids (at most 1000)
-- Reply: how many were marked
local users = ARGV
local inLine = redis.call('ZMSCORE', K.line, unpack(users))
local now = clock()
local marks = {}
for i = 1, #users do
  if inLine[i] then
    append(marks, {now, users[i]})
  end
end
if #marks > 0 then
  redis.call('ZADD', K.seen, unpack(marks))
end
return #marks / 2
