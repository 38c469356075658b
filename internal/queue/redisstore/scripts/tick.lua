-- tick: read what one admission tick needs (queue.TickInput) and a stretch
-- of the line's front, in one step, for queue.PlanTick to decide in Go;
-- admit.lua applies the plan. A tick that passes over no-shows, or looks at
-- the edge of their reach, reads further stretches with this script again.
-- Changes nothing.
--
-- KEYS the queue's (prelude)
-- ARGV[1] the front's first rank to read (0-based), ARGV[2] how many (≤ 1000)
-- Reply: {-1} unknown queue, else
--        {now, length, live tokens, the config list (prelude), TICK of the
--        admission hash..., then user, ticket, last seen (nil: never), ...}
local _, list, refused = config()
if refused then
  return refused
end
local now = clock()
local reply = {now, redis.call('ZCARD', K.line), redis.call('ZCOUNT', K.texp, '(' .. now, '+inf')}
append(append(reply, list), redis.call('HMGET', K.adm, unpack(TICK)))
local from, n = tonumber(ARGV[1]), tonumber(ARGV[2])
local users = {}
if n > 0 then
  users = redis.call('ZRANGE', K.line, from, from + n - 1, 'WITHSCORES')
end
local names = {}
for i = 1, #users, 2 do
  names[#names + 1] = users[i]
end
if #names == 0 then
  return reply
end
local seen = redis.call('ZMSCORE', K.seen, unpack(names))
for i = 1, #names do
  append(reply, {names[i], users[2 * i], seen[i]})
end
return reply
