-- end_use: release a token's in-flight lock, if this request (the owner)
-- holds it; when the order succeeded, also delete the token, but only if it
-- is still the one that was used (compare-and-delete: never delete a newer
-- token of the same user).
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] user id
-- ARGV[2] the token used
-- ARGV[3] '1' if the order succeeded (consume), '0' otherwise
-- ARGV[4] owner
-- Reply: 1 if the token was deleted, else 0
local user = ARGV[1]
local used = ARGV[2]
local consumed = ARGV[3] == '1'
local owner = ARGV[4]
if redis.call('HGET', K.owners, user) == owner then
  redis.call('ZREM', K.inflight, user)
  redis.call('HDEL', K.owners, user)
end
if consumed and redis.call('HGET', K.tokens, user) == used then
  -- A token whose time ran out while its order was in flight counts as
  -- expired (dropToken).
  dropToken(user, 'consumed', clock())
  return 1
end
return 0
