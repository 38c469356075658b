-- seen: mark users still in line as present now, for the no-show rule
-- (admission.PlanTick, abandon_ms). Instances batch the status polls of users
-- near the front, and pages' beacons, and send them here about once a second.
-- A mark's score is the time in ms, negative for a page that said it was
-- hidden (abandon_hidden_ms; issue 55): K.seen's older marks, all positive,
-- read as visible ones.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] '1': the pages are hidden, '0': visible
-- ARGV[2..] user ids (at most 1000), in the line or another lane
-- Reply: how many were marked
local users = {unpack(ARGV, 2)}
local inLine = redis.call('ZMSCORE', K.line, unpack(users))
local inLane = redis.call('ZMSCORE', K.lanes, unpack(users))
local now = clock()
if ARGV[1] == '1' then now = -now end
local marks = {}
for i = 1, #users do
  if inLine[i] or inLane[i] then
    append(marks, {now, users[i]})
  end
end
if #marks > 0 then
  redis.call('ZADD', K.seen, unpack(marks))
end
return #marks / 2
