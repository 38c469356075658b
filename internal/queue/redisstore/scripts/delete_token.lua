-- delete_token: revoke a named token (staff.TokenStore.DeleteToken): its
-- name, its record and its last use go in one step, so no instance finds
-- the hash after the name is gone.
--
-- KEYS the staff's keys (put_token.lua): names, records, last uses
-- ARGV[1] the name
-- Reply: 1 revoked, 0 none of that name
local names, records, used = KEYS[#KEYS - 2], KEYS[#KEYS - 1], KEYS[#KEYS]
local name = ARGV[1]
local hash = redis.call('HGET', names, name)
if not hash then
  return 0
end
redis.call('HDEL', names, name)
redis.call('HDEL', records, hash)
redis.call('HDEL', used, hash)
return 1
