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
-- Under queueingMethod random the plan names nobody: it says how many to
-- draw, d, and brings random values (Go's crypto/rand, never Lua's
-- math.random, which Redis seeds alike every time). Each value picks a
-- user at the rank queue.DrawIndex gives in the line as it is now, and that
-- user leaves before the next value is used (a draw without replacement);
-- a no-show drawn (queue.Absence.NoShow: ticket judged, not seen since the
-- bar, both Go's figures) leaves without a token, and the next value
-- draws again. Drawn users leave a gap for snapshot.lua, as leavers do.
--
-- KEYS the queue's (prelude)
-- ARGV[1] the due time read ('' none), ARGV[2] the tokens' expiry (ms),
-- ARGV[3] s, ARGV[4] a, ARGV[5] n, ARGV[6] d, ARGV[7] v, ARGV[8] the
-- judged ticket and ARGV[9] the seen bar (ms) of a draw's no-shows: then s
-- field, value pairs of the admission hash to set ('' deletes the field),
-- a field, number pairs to add to it, the d tokens of a draw and its v
-- random values (each below 2^53), and the users planned as user, ticket,
-- token triples, the ARGV[5] admitted first, then the no-shows as user,
-- ticket, the seen mark read (ms; 0 never)
-- Reply: {0} not the tick read; {1, skipped, admitted user, ...} applied
if (redis.call('HGET', K.adm, 'next') or '') ~= ARGV[1] then
  return {0}
end
local set, unset = {}, {}
local at = 10 + 2 * tonumber(ARGV[3])
for i = 10, at - 1, 2 do
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
-- let: the user leaves the line, admitted with token, or skipped as a
-- no-show without one.
local function let(user, token)
  redis.call('ZREM', K.line, user)
  redis.call('ZREM', K.seen, user)
  if token then
    redis.call('HSET', K.tokens, user, token)
    redis.call('ZADD', K.texp, ARGV[2], user)
    reply[#reply + 1] = user
  else
    skipped = skipped + 1
  end
end

local draw, values = tonumber(ARGV[6]), at + tonumber(ARGV[6])
local judged, bar, length = tonumber(ARGV[8]), tonumber(ARGV[9]), 0
if draw > 0 then
  length = redis.call('ZCARD', K.line)
end
for i = values, values + tonumber(ARGV[7]) - 1 do
  if #reply - 2 == draw or length == 0 then
    break
  end
  local rank = math.floor(tonumber(ARGV[i]) / 2 ^ 53 * length) -- queue.DrawIndex
  local drawn = redis.call('ZRANGE', K.line, rank, rank, 'WITHSCORES')
  local user, ticket = drawn[1], tonumber(drawn[2])
  local noShow = ticket <= judged and (tonumber(redis.call('ZSCORE', K.seen, user)) or 0) < bar
  redis.call('ZADD', K.left, ticket, ticket)
  let(user, not noShow and ARGV[at + #reply - 2] or nil)
  length = length - 1
end
at = values + tonumber(ARGV[7])

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
      let(users[j], not noShow and third or nil)
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
