-- put_token: keep a named token (issue 56; staff.TokenStore.PutToken) under
-- its name and its hash at once, unless the name is taken: two admins
-- making one name at the same moment get one token and one refusal.
--
-- KEYS the staff's keys, after the queue's (it names none): the names
--      ({:staff}:tokens, name → hash), the records ({:staff}:tokenhash,
--      hash → record JSON) and the last uses ({:staff}:tokenused,
--      hash → ms)
-- ARGV[1] the name, ARGV[2] the hash, ARGV[3] the record's JSON
-- Reply: 1 kept, 0 the name is taken
local names, records = KEYS[#KEYS - 2], KEYS[#KEYS - 1]
local name, hash, record = ARGV[1], ARGV[2], ARGV[3]
if redis.call('HSETNX', names, name, hash) == 0 then
  return 0
end
redis.call('HSET', records, hash, record)
return 1
