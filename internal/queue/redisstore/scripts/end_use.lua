-- end_use: release a token's in-flight lock, if this request (the owner)
-- holds it; when the order succeeded, also delete the token, but only if it
-- is still the one that was used (compare-and-delete: never delete a newer
-- token of the same user).
--
-- KEYS[1] tokens   HASH user → entry token
-- KEYS[2] texp     ZSET user → token expiry (ms)
-- KEYS[3] inflight ZSET user → lock expiry (ms)
-- KEYS[4] owners   HASH user → the lock's owner
-- KEYS[5] adm      HASH counters
-- ARGV[1] user id
-- ARGV[2] the token used
-- ARGV[3] '1' if the order succeeded (consume), '0' otherwise
-- ARGV[4] owner
-- Reply: 1 if the token was deleted, else 0
local user = ARGV[1]
if redis.call('HGET', KEYS[4], user) == ARGV[4] then
  redis.call('ZREM', KEYS[3], user)
  redis.call('HDEL', KEYS[4], user)
end
if ARGV[3] == '1' and redis.call('HGET', KEYS[1], user) == ARGV[2] then
  -- A token whose time ran out while its order was in flight counts as
  -- expired, as stats.lua counted it already: the counters never go back.
  local counter = 'consumed'
  local exp = tonumber(redis.call('ZSCORE', KEYS[2], user))
  if exp then
    local t = redis.call('TIME')
    if exp <= tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) then counter = 'expired' end
  end
  redis.call('HDEL', KEYS[1], user)
  redis.call('ZREM', KEYS[2], user)
  redis.call('HINCRBY', KEYS[5], counter, 1)
  return 1
end
return 0
