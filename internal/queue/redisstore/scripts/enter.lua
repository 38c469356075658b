-- enter: put a user in line, or tell them where they already stand.
-- Already in line or in the pre-queue → the same; valid token → READY; line
-- full → refused; an opening ahead → the pre-queue; otherwise take the next
-- ticket (INCR, never a clock) and join. One script, so no request can slip
-- between the checks and the join. A user joining or entering again near
-- the front is seen now (markSeen).
--
-- KEYS the queue's (prelude)
-- ARGV[1] user id
-- Reply: {-1} unknown queue; an error starting DAMAGED (nothing written)
--        when the config lacks a field this script needs
--        {-2, length} line full
--        {1, position, length, ticket, pace...} waiting
--        {2, token, expiresAtMs, pace...} ready
--        {3, pace...} waiting for the opening, no place yet
local cfg, list, refused = config({'rate', 'batch', 'capacity'}, {'abandon_ms', 'opens_at'})
if refused then
  return refused
end
local adm = readAdmission()
local user, now = ARGV[1], clock()
local length = redis.call('ZCARD', K.line)

local held, expired = standing(cfg, adm, user, now, length)
if held then
  if held[1] == 1 then
    markSeen(cfg, adm, user, held[2], now)
  end
  return pace(held, list, adm, now, length)
end
if expired then -- forget it, and line up again like anyone else
  dropToken(user, 'expired', now)
end
if length + (opening(cfg, adm) and redis.call('ZCARD', K.pre) or 0) >= tonumber(cfg.capacity) then
  return {-2, length}
end
-- An opening ahead (its pre-queue not yet closed): wait for it, unplaced.
if (tonumber(cfg.opens_at) or 0) > 0 and not adm.open_state then
  redis.call('ZADD', K.pre, 'NX', now, user)
  return pace({3}, list, adm, now, length)
end
if length == 0 then
  redis.call('HSET', K.adm, 'moved', now) -- someone starts waiting: the front has not stood still
  adm.moved = now
end
local ticket = redis.call('INCR', K.seq)
redis.call('ZADD', K.line, 'NX', ticket, user)
-- Tickets only grow, so the newcomer is last, behind the unplaced too.
local position = length + unplaced(adm) + 1
markSeen(cfg, adm, user, position, now)
return pace({1, position, position, ticket}, list, adm, now, length + 1)
