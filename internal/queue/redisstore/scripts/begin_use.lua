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
local stored = redis.call('HGET', K.tokens, user)
-- Compare digests, not the secrets: the time a string compare takes then
-- says nothing useful about the stored token.
if not stored or redis.sha1hex(stored) ~= redis.sha1hex(ARGV[2]) then
  return 0
end
local now = clock()
local exp = tonumber(redis.call('ZSCORE', K.texp, user))
if not exp or exp <= now then
  return 0
end
local lockUntil = tonumber(redis.call('ZSCORE', K.inflight, user))
if lockUntil and lockUntil > now and redis.call('HGET', K.owners, user) ~= ARGV[4] then
  return -1
end
redis.call('ZADD', K.inflight, now + tonumber(ARGV[3]), user)
redis.call('HSET', K.owners, user, ARGV[4])
return 1
