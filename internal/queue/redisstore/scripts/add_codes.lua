-- add_codes: keep access codes for a queue (issue 53; queue.Store.AddCodes),
-- by their hashes only (accesscode.Hash: a code is never stored in
-- clear). A hash held already is a duplicate, left as it is, its
-- redemptions too. The redemptions added count on their lane
-- (K.lanestats added:<lane>), for stats' codes left.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV hash, lane, uses, expiresMs (0: none) of each code, at most 1000
--      codes a call, each checked (accesscode.Code.Check: a lane, uses 1
--      to MaxUses, decimal digits)
-- Reply: {UNKNOWN_QUEUE}; else {added, duplicates}
local cfg, adm, refused = config()
if refused then return refused end
local added, uses = 0, {}
for i = 1, #ARGV - 3, 4 do
  local lane, n = ARGV[i + 1], ARGV[i + 2] -- n as Go wrote it: a Lua number may print as 1e+14
  if redis.call('HSETNX', K.codes, ARGV[i], lane .. ' ' .. n .. ' ' .. ARGV[i + 3]) == 1 then
    added = added + 1
    uses[lane] = (uses[lane] or 0) + tonumber(n)
  end
end
for lane, n in pairs(uses) do
  redis.call('HINCRBY', K.lanestats, 'added:' .. lane, scoreText(n)) -- at most 1000 × MaxUses: exact
end
return {added, #ARGV / 4 - added}
