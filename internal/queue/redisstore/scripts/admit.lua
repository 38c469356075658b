-- admit: apply one admission tick that queue.PlanTick planned on what
-- tick.lua read, if the tick is still the one read: its due time unchanged.
-- An instance that claimed the tick meanwhile moved it on, and so did this
-- very call if the Redis client re-sent it (the reply came after its read
-- timeout, though Redis ran it): either way this call admits nobody, so no
-- token ever reaches two people. A user planned leaves the line only if
-- they still hold the ticket they were read with (one who left meanwhile is
-- passed over); the admitted get their tokens in the same step, so nobody
-- leaves the line without one. A no-show planned is passed over too if
-- they were seen after the read (asked in between: markSeen), so nobody who
-- asks is skipped as absent.
--
-- KEYS the queue's (prelude)
-- ARGV[1] the due time read ('' none), ARGV[2] the tokens' expiry (ms),
-- ARGV[3] s, ARGV[4] a, ARGV[5] n: then s field, value pairs of the admission hash to
-- set ('' deletes the field), a field, number pairs to add to it, and the
-- users planned as user, ticket, token triples, the ARGV[5] admitted
-- first, then the no-shows as user, ticket, the seen mark read (ms; 0 never)
-- Reply: {0} not the tick read; {1, skipped, admitted user, ...} applied
if (redis.call('HGET', K.adm, 'next') or '') ~= ARGV[1] then
  return {0}
end
local set, unset = {}, {}
local at = 6 + 2 * tonumber(ARGV[3])
for i = 6, at - 1, 2 do
  if ARGV[i + 1] == '' then
    unset[#unset + 1] = ARGV[i]
  else
    append(set, {ARGV[i], ARGV[i + 1]})
  end
end
for i = at, at + 2 * tonumber(ARGV[4]) - 1, 2 do
  redis.call('HINCRBY', K.adm, ARGV[i], ARGV[i + 1])
end
at = at + 2 * tonumber(ARGV[4])

local reply, skipped, admitted = {1, 0}, 0, tonumber(ARGV[5])
-- stillAbsent: a no-show read as last seen at seen (ms) has not asked since.
local function stillAbsent(user, seen)
  return (tonumber(redis.call('ZSCORE', K.seen, user)) or 0) <= tonumber(seen)
end
for first = at, #ARGV, 3000 do
  local users = {}
  for i = first, math.min(first + 2999, #ARGV), 3 do
    users[#users + 1] = ARGV[i]
  end
  local held = redis.call('ZMSCORE', K.line, unpack(users))
  for j = 1, #users do
    local ticket, third = ARGV[first + 3 * j - 2], ARGV[first + 3 * j - 1]
    local noShow = (first - at) / 3 + j > admitted
    if tonumber(held[j]) == tonumber(ticket) and (not noShow or stillAbsent(users[j], third)) then
      redis.call('ZREM', K.line, users[j])
      redis.call('ZREM', K.seen, users[j])
      if noShow then
        skipped = skipped + 1
      else
        redis.call('HSET', K.tokens, users[j], third)
        redis.call('ZADD', K.texp, ARGV[2], users[j])
        reply[#reply + 1] = users[j]
      end
    end
  end
end
reply[2] = skipped
if #reply > 2 then
  redis.call('HINCRBY', K.adm, 'admitted', #reply - 2)
end
if skipped > 0 then
  redis.call('HINCRBY', K.adm, 'abandoned', skipped)
end
if #set > 0 then
  redis.call('HSET', K.adm, unpack(set))
end
if #unset > 0 then
  redis.call('HDEL', K.adm, unpack(unset))
end
return reply
