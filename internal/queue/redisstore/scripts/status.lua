-- status: where a user stands, read in one step with the line's pace (the
-- estimate's inputs). Changes nothing.
--
-- KEYS the queue's (prelude)
-- ARGV[1] user id
-- Reply: {-1} unknown queue; an error starting DAMAGED when the config
--        lacks a field this script needs
--        {0, pace...} not in queue
--        {1, position, length, ticket, pace...} waiting
--        {2, token, expiresAtMs, pace...} ready
--        {3, pace...} waiting for the opening, no place yet
local cfg, list, refused = config({'rate', 'batch'})
if refused then
  return refused
end
local now = clock()
local length = redis.call('ZCARD', K.line)
return append(standing(ARGV[1], now, length) or {0}, pace(list, now, length))
