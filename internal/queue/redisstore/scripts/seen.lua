-- seen: mark users still in line as present now, for the no-show rule
-- (admission.PlanTick, abandon_ms). Instances batch the status polls of users
-- near the front, and pages' beacons, and send them here about once a second.
-- A mark's score is the time in ms, negative for a page that said it was
-- hidden (abandon_hidden_ms; issue 55): K.seen's older marks, all positive,
-- read as visible ones. A visible mark within ARGV[2] of a hidden one keeps
-- it hidden (admission.HiddenHolds: perhaps a poll made before its page was
-- hidden, flushed by another instance after the beacon).
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] '1': the pages are hidden, '0': visible
-- ARGV[2] how long a hidden mark holds against a visible one (ms)
-- ARGV[3..] user ids (at most 1000), in the line or another lane
-- Reply: how many were marked
local users = {unpack(ARGV, 3)}
local hidden, holds = ARGV[1] == '1', tonumber(ARGV[2])
local inLine = redis.call('ZMSCORE', K.line, unpack(users))
local inLane = redis.call('ZMSCORE', K.lanes, unpack(users))
local was = hidden and {} or redis.call('ZMSCORE', K.seen, unpack(users))
local now = clock()
local marks = {}
for i = 1, #users do
  if inLine[i] or inLane[i] then
    local w = tonumber(was[i] or 0) or 0
    append(marks, {(hidden or w < 0 and now + w < holds) and -now or now, users[i]})
  end
end
if #marks > 0 then
  redis.call('ZADD', K.seen, unpack(marks))
end
return #marks / 2
