-- tick: read what one admission tick needs (admission.TickInput) and a stretch
-- of the line's front, in one step, for admission.PlanTick to decide in Go;
-- admit.lua applies the plan. A tick that passes over no-shows, or looks at
-- the edge of their reach, reads further stretches with this script again.
-- Changes nothing.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] the front's first rank to read (0-based), ARGV[2] how many
--         (≤ 1000), ARGV[3] 'shadow' to read the shadow line's front
--         (shadowAdmits last, the line empty) instead of the line's,
--         ARGV[4..] the fields of the queue's hash Go reads (tick.go's
--         tickReads: every setting, the epoch, the tick state)
-- Reply: {now, length, live tokens, shadow line's length, the fields'
--        values..., then user, ticket, last seen (nil: never), ...}; Go
--        tells an unknown queue by its fields
local from = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local line = ARGV[3] == 'shadow' and K.shadow or K.line
local fields = {unpack(ARGV, 4)}
local now = clock()
local reply = {now, redis.call('ZCARD', K.line), redis.call('ZCOUNT', K.texp, '(' .. now, '+inf'), redis.call('ZCARD', K.shadow)}
append(reply, redis.call('HMGET', K.cfg, unpack(fields)))
local users = {}
if n > 0 then
  users = redis.call('ZRANGE', line, from, from + n - 1, 'WITHSCORES')
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
