-- tokens: read the named tokens (staff.TokenStore.TokenByHash, Tokens),
-- each record with its last use. Changes nothing.
--
-- KEYS the staff's keys (put_token.lua): names, records, last uses
-- ARGV[1] a hash: that token only (O(1)); '': every token
-- Reply: {record JSON, last use ms or '', ...}
local records, used = KEYS[#KEYS - 1], KEYS[#KEYS]
local hash = ARGV[1]
if hash ~= '' then
  local record = redis.call('HGET', records, hash)
  if not record then return {} end
  return {record, redis.call('HGET', used, hash) or ''}
end
local all = redis.call('HGETALL', records)
local reply = {}
for i = 1, #all, 2 do
  reply[#reply + 1] = all[i + 1]
  reply[#reply + 1] = redis.call('HGET', used, all[i]) or ''
end
return reply
