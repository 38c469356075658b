-- front: a stretch of the line's front for an admission tick being planned
-- (queue.Front): whom it may admit or pass over as no-shows, and the
-- ticket at the edge of the no-shows' reach. Changes nothing.
--
-- KEYS the queue's (prelude)
-- ARGV[1] the first rank to read (0-based), ARGV[2] how many (1..1000)
-- Reply: {user, ticket, last seen (ms; nil: never), ...} in line order
local from = tonumber(ARGV[1])
local users = redis.call('ZRANGE', K.line, from, from + tonumber(ARGV[2]) - 1, 'WITHSCORES')
if #users == 0 then
  return {}
end
local names = {}
for i = 1, #users, 2 do
  names[#names + 1] = users[i]
end
local seen = redis.call('ZMSCORE', K.seen, unpack(names))
local reply = {}
for i = 1, #names do
  append(reply, {names[i], users[2 * i], seen[i]})
end
return reply
