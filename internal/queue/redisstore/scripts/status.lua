-- status: where a user stands, read in one step with the line's pace (the
-- estimate's inputs). Changes nothing, but for one write: when no-shows are
-- skipped, a waiting user near the front who asks is seen now, as on
-- entering (markSeen).
--
-- KEYS the queue's (the generated text's second line names them), then
--      the user's moved mark ({q}:moved:<user>), last
-- ARGV[1] user id
-- Reply: {UNKNOWN_QUEUE}; an error starting DAMAGED when the config lacks
--        a field this script needs; else standing's, then the pace block:
--        {NOT_IN_LINE, pace...}
--        {WAITING, position, length, ticket, pace...}
--        {LANE, position, length, ticket, lane, pace...} in another lane
--        {READY, token, expiresAtMs, pace...}
--        {PRE_QUEUE, pace...} waiting for the opening, no place yet
--        {MOVED, pace...} no place, for it moved to another session
--        lately (issue 55: the user's moved mark, KEYS' last)
local user = ARGV[1]
local cfg, adm, refused = config({'rate', 'batch'}, {'abandon_ms'})
if refused then return refused end
local now = clock()
local length = redis.call('ZCARD', K.line)
local held = standing(cfg, adm, user, now, length)
if held and (held[1] == WAITING or held[1] == LANE) then
  markSeen(cfg, adm, user, held[2], now)
end
if not held and redis.call('EXISTS', KEYS[#KEYS]) == 1 then held = {MOVED} end
return pace(held or {NOT_IN_LINE}, cfg, adm, now, everyone(adm, length))
