-- begin_use: check an entry token and take its short in-flight lock for one
-- request (the owner), so that a second concurrent use of the same token is
-- refused while the first is still deciding. The same owner asking again
-- (a retry whose first reply was lost) gets the lock it already holds.
--
-- KEYS[1] tokens   HASH user → entry token
-- KEYS[2] texp     ZSET user → token expiry (ms)
-- KEYS[3] inflight ZSET user → lock expiry (ms)
-- KEYS[4] owners   HASH user → the lock's owner
-- ARGV[1] user id
-- ARGV[2] the token presented
-- ARGV[3] lock duration (ms)
-- ARGV[4] owner (random per request)
-- Reply: 1 locked, 0 token invalid (missing, wrong or expired), -1 in use
local user = ARGV[1]
local stored = redis.call('HGET', KEYS[1], user)
-- Compare digests, not the secrets: the time a string compare takes then
-- says nothing useful about the stored token.
if not stored or redis.sha1hex(stored) ~= redis.sha1hex(ARGV[2]) then
  return 0
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local exp = tonumber(redis.call('ZSCORE', KEYS[2], user))
if not exp or exp <= now then
  return 0
end
local lockUntil = tonumber(redis.call('ZSCORE', KEYS[3], user))
if lockUntil and lockUntil > now and redis.call('HGET', KEYS[4], user) ~= ARGV[4] then
  return -1
end
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), user)
redis.call('HSET', KEYS[4], user, ARGV[4])
-- Forget lapsed locks of others (bounded work per call).
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now, 'LIMIT', 0, 100)
if #lapsed > 0 then
  redis.call('ZREM', KEYS[3], unpack(lapsed))
  redis.call('HDEL', KEYS[4], unpack(lapsed))
end
return 1
