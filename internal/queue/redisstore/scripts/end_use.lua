-- end_use: release a token's in-flight lock; when the order succeeded, also
-- delete the token, but only if it is still the one that was used
-- (compare-and-delete: never delete a newer token of the same user).
--
-- KEYS[1] tokens   HASH user → entry token
-- KEYS[2] texp     ZSET user → token expiry (ms)
-- KEYS[3] inflight ZSET user → lock expiry (ms)
-- KEYS[4] adm      HASH counters
-- ARGV[1] user id
-- ARGV[2] the token used
-- ARGV[3] '1' if the order succeeded (consume), '0' otherwise
-- Reply: 1 if the token was deleted, else 0
local user = ARGV[1]
redis.call('ZREM', KEYS[3], user)
if ARGV[3] == '1' and redis.call('HGET', KEYS[1], user) == ARGV[2] then
  redis.call('HDEL', KEYS[1], user)
  redis.call('ZREM', KEYS[2], user)
  redis.call('HINCRBY', KEYS[4], 'consumed', 1)
  return 1
end
return 0
