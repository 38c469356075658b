-- leave: out of the line, the shadow line or the pre-queue, or give back
-- an unused token. A user who leaves the line leaves a gap that
-- snapshot.lua must know of: their ticket goes in K.left (the janitor,
-- sweep.lua, drops those below the head); a place cleared from the shadow
-- line has no ticket, and leaves K.cleared instead (unmark). One who
-- leaves another lane than the public (K.lanes) left a gap when they
-- joined.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] user id
-- Reply: LEFT_LINE (the line or the shadow line), GAVE_BACK (an unused
--        token), LEFT_PRE_QUEUE, or
--        NOTHING_LEFT when there was nothing to remove
local user = ARGV[1]
local ticket = redis.call('ZSCORE', K.line, user)
if ticket then
  redis.call('ZREM', K.line, user)
  redis.call('ZREM', K.seen, user)
  redis.call('HDEL', K.joined, user)
  if unmark(user, tonumber(ticket), false) then redis.call('ZADD', K.left, ticket, ticket) end
  redis.call('HINCRBY', K.cfg, 'left', 1)
  return LEFT_LINE
end
-- Another lane's place (issue 53): its ticket is a gap already.
if redis.call('ZREM', K.lanes, user) == 1 then
  redis.call('ZREM', K.seen, user)
  redis.call('HDEL', K.joined, user)
  redis.call('HINCRBY', K.cfg, 'left', 1)
  return LEFT_LINE
end
if redis.call('ZREM', K.shadow, user) == 1 then
  unmark(user, 0, true)
  redis.call('HDEL', K.joined, user)
  redis.call('HINCRBY', K.cfg, 'shadow_left', 1)
  return LEFT_LINE
end
if redis.call('ZREM', K.pre, user) == 1 then
  redis.call('HDEL', K.prelanes, user)
  -- While the opening is placed, pre-queued users hold reserved tickets:
  -- they entered, and now they left (place.lua leaves their ticket a gap).
  if redis.call('HGET', K.cfg, 'open_state') == 'placing' then
    redis.call('HINCRBY', K.cfg, 'left', 1)
  end
  return LEFT_PRE_QUEUE
end
if redis.call('HEXISTS', K.tokens, user) == 1 then
  dropToken(user, 'returned', clock())
  return GAVE_BACK
end
return NOTHING_LEFT
