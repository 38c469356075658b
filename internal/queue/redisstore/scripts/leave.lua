-- leave: out of the line or the pre-queue, or give back an unused token.
-- A user who leaves the line leaves a gap that snapshot.lua must know of:
-- their ticket goes in K.left (the janitor, sweep.lua, drops those below
-- the head).
--
-- KEYS the queue's (prelude)
-- ARGV[1] user id
-- Reply: 1 if the user left the line, 2 if a token was given back, 3 if
--        they left the pre-queue, 0 if there was nothing to remove.
local user = ARGV[1]
local ticket = redis.call('ZSCORE', K.line, user)
if ticket then
  redis.call('ZREM', K.line, user)
  redis.call('ZREM', K.seen, user)
  redis.call('ZADD', K.left, ticket, ticket)
  redis.call('HINCRBY', K.adm, 'left', 1)
  return 1
end
if redis.call('ZREM', K.pre, user) == 1 then
  -- While the opening is placed, pre-queued users hold reserved tickets:
  -- they entered, and now they left (place.lua leaves their ticket a gap).
  if redis.call('HGET', K.adm, 'open_state') == 'placing' then
    redis.call('HINCRBY', K.adm, 'left', 1)
  end
  return 3
end
if redis.call('HEXISTS', K.tokens, user) == 1 then
  dropToken(user, 'returned', clock())
  return 2
end
return 0
