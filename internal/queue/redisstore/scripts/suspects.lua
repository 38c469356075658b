-- suspects: the first places of the shadow line, in its order, as an
-- operator lists them (queue.Store.Suspects). Changes nothing.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] at most this many
-- Reply: {UNKNOWN_QUEUE}; else {user, ticket, mark, joined, ...}: the
--        mark as K.suspects keeps it ("behind|address|signals") and the
--        taking as K.joined does ("ms -1": no wait shown)
local limit = tonumber(ARGV[1])
local _, _, refused = config()
if refused then return refused end
local reply = {}
if limit <= 0 then return reply end
local places = redis.call('ZRANGE', K.shadow, 0, limit - 1, 'WITHSCORES')
if #places == 0 then return reply end
local users = {}
for i = 1, #places, 2 do users[#users + 1] = places[i] end
local marks = redis.call('HMGET', K.suspects, unpack(users))
local joined = redis.call('HMGET', K.joined, unpack(users))
for i = 1, #users do
  append(reply, {users[i], places[2 * i], marks[i] or '', joined[i] or ''})
end
return reply
