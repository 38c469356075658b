-- begin_use: check an entry token and take its short in-flight lock for one
-- request (the owner), so that a second concurrent use of the same token is
-- refused while the first is still deciding. The same owner asking again
-- (a retry whose first reply was lost) gets the lock it already holds.
-- Lapsed locks of others are the janitor's (sweep.lua).
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] user id
-- ARGV[2] the token presented
-- ARGV[3] lock duration (ms)
-- ARGV[4] owner (random per request)
-- Reply: LOCKED, TOKEN_INVALID (missing, wrong or expired), or IN_USE
local user = ARGV[1]
local presented = ARGV[2]
local lockMs = tonumber(ARGV[3])
local owner = ARGV[4]
local exp, now = liveToken(user, presented)
if not exp then
  return TOKEN_INVALID
end
local lockUntil = tonumber(redis.call('ZSCORE', K.inflight, user))
if lockUntil and lockUntil > now and redis.call('HGET', K.owners, user) ~= owner then
  return IN_USE
end
redis.call('ZADD', K.inflight, now + lockMs, user)
redis.call('HSET', K.owners, user, owner)
return LOCKED
