-- begin_use: check an entry token and take its short in-flight lock for one
-- request (the owner), so that a second concurrent use of the same token is
-- refused while the first is still deciding. The same owner asking again
-- (a retry whose first reply was lost) gets the lock it already holds.
-- Lapsed locks of others are the janitor's (sweep.lua).
--
-- KEYS the queue's (prelude)
-- ARGV[1] user id
-- ARGV[2] the token presented
-- ARGV[3] lock duration (ms)
-- ARGV[4] owner (random per request)
-- Reply: 1 locked, 0 token invalid (missing, wrong or expired), -1 in use
local user = ARGV[1]
local exp, now = liveToken(user, ARGV[2])
if not exp then
  return 0
end
local lockUntil = tonumber(redis.call('ZSCORE', K.inflight, user))
if lockUntil and lockUntil > now and redis.call('HGET', K.owners, user) ~= ARGV[4] then
  return -1
end
redis.call('ZADD', K.inflight, now + tonumber(ARGV[3]), user)
redis.call('HSET', K.owners, user, ARGV[4])
return 1
