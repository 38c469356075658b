-- touch_token: set a named token's last use (staff.TokenStore.TouchToken)
-- if later than the one kept, and only while the token is kept: a touch
-- racing a revoke never leaves a last use behind.
--
-- KEYS the staff's keys (put_token.lua): names, records, last uses
-- ARGV[1] the hash, ARGV[2] the use (ms)
-- Reply: 1 set, 0 not (not kept, or not later)
local records, used = KEYS[#KEYS - 1], KEYS[#KEYS]
local hash, at = ARGV[1], tonumber(ARGV[2])
if redis.call('HEXISTS', records, hash) == 0 then
  return 0
end
local kept = tonumber(redis.call('HGET', used, hash) or '0')
if at <= kept then
  return 0
end
redis.call('HSET', used, hash, ARGV[2])
return 1
