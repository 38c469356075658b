-- status: where a user stands, read in one step with the line's pace (the
-- estimate's inputs). Changes nothing, but for one write: when no-shows are
-- skipped, a waiting user near the front who asks is seen now, as on
-- entering (markSeen).
--
-- KEYS the queue's (prelude)
-- ARGV[1] user id
-- Reply: {-1} unknown queue; an error starting DAMAGED when the config
--        lacks a field this script needs
--        {0, pace...} not in queue
--        {1, position, length, ticket, pace...} waiting
--        {2, token, expiresAtMs, pace...} ready
--        {3, pace...} waiting for the opening, no place yet
local cfg, list, refused = config({'rate', 'batch'}, {'abandon_ms'})
if refused then
  return refused
end
local adm, now = readAdmission(), clock()
local length = redis.call('ZCARD', K.line)
local held = standing(cfg, adm, ARGV[1], now, length)
if held and held[1] == 1 then
  markSeen(cfg, adm, ARGV[1], held[2], now)
end
return pace(held or {0}, list, adm, now, length)
