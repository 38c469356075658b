-- leave: out of the line or the pre-queue, or give back an unused token.
--
-- KEYS[1] line   ZSET user → ticket
-- KEYS[2] tokens HASH user → entry token
-- KEYS[3] texp   ZSET user → token expiry
-- KEYS[4] adm    HASH admission state and counters
-- KEYS[5] left   ZSET ticket → ticket, of users who left the line (for
--                snapshot.lua; admit.lua drops those below the head)
-- KEYS[6] pre    ZSET the opening's pre-queue
-- KEYS[7] seen   ZSET user near the front → last seen
-- ARGV[1] user id
-- Reply: 1 if the user left the line, 2 if a token was given back, 3 if
--        they left the pre-queue, 0 if there was nothing to remove.
local user = ARGV[1]
local ticket = redis.call('ZSCORE', KEYS[1], user)
if ticket then
  redis.call('ZREM', KEYS[1], user)
  redis.call('ZREM', KEYS[7], user)
  redis.call('ZADD', KEYS[5], ticket, ticket)
  redis.call('HINCRBY', KEYS[4], 'left', 1)
  return 1
end
if redis.call('ZREM', KEYS[6], user) == 1 then
  -- While the opening is placed, pre-queued users hold reserved tickets:
  -- they entered, and now they left (place.lua leaves their ticket a gap).
  if redis.call('HGET', KEYS[4], 'open_state') == 'placing' then
    redis.call('HINCRBY', KEYS[4], 'left', 1)
  end
  return 3
end
if redis.call('HDEL', KEYS[2], user) == 1 then
  -- A token whose time was up counts as expired, as stats.lua counted it
  -- already: the counters never go back.
  local counter = 'returned'
  local exp = tonumber(redis.call('ZSCORE', KEYS[3], user))
  if exp then
    local t = redis.call('TIME')
    if exp <= tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) then counter = 'expired' end
  end
  redis.call('ZREM', KEYS[3], user)
  redis.call('HINCRBY', KEYS[4], counter, 1)
  return 2
end
return 0
