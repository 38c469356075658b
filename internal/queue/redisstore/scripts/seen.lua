-- seen: mark users still in line as present now, for admit.lua's no-show
-- rule (abandon_ms). Instances batch the status polls of users near the
-- front and send them here about once a second.
--
-- KEYS[1] line ZSET user → ticket
-- KEYS[2] seen ZSET user near the front → last seen (ms)
-- ARGV    user ids (at most 1000)
-- Reply: how many were marked
local inLine = redis.call('ZMSCORE', KEYS[1], unpack(ARGV))
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local marks = {}
for i = 1, #ARGV do
  if inLine[i] then
    marks[#marks + 1] = now
    marks[#marks + 1] = ARGV[i]
  end
end
if #marks > 0 then
  redis.call('ZADD', KEYS[2], unpack(marks))
end
return #marks / 2
