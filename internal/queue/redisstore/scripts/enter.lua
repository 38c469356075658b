-- enter: put users in line, or tell each where they already stand.
-- Already in line or in the pre-queue → the same; valid token → READY; line
-- full → refused; sold out (units_left 0) → refused; an opening ahead →
-- the pre-queue; otherwise take the next
-- ticket (INCR, never a clock) and join. One script, so no request can slip
-- between the checks and the join. A user joining or entering again near
-- the front is seen now (markSeen). A newcomer's place keeps when it was
-- taken and the wait and range they were shown (K.joined, shown: "ms
-- shown low high"), for admission to measure their time in line and the
-- estimate's accuracy.
--
-- Several users, one after the other as if each came alone: an instance
-- sends together the enters of a queue that arrived while its last call was
-- under way (enterbatch.go). What every one of them reads the same (the
-- config, the admission state, the clock, the line's length) is read once.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV the user ids, in the order they came
-- Reply: {UNKNOWN_QUEUE}; an error starting DAMAGED (nothing written)
--        when the config lacks a field this script needs; else one reply
--        per user, in ARGV's order, each ending with the line's length as
--        that user's pace block would carry it:
--        {LINE_FULL, length}
--        {SOLD_OUT, length}
--        {WAITING, position, length, ticket, paceLength}
--        {LANE, position, length, ticket, lane, paceLength} in another lane
--        {READY, token, expiresAtMs, paceLength}
--        {PRE_QUEUE, paceLength} waiting for the opening, no place yet
--        then one pace block for them all, as it stands after the last:
--        the only pace field an enter writes is moved, when someone joins
--        an empty line, and a pace reads it only while the line is not
--        empty, so the last one reads the same for every user. Sent once,
--        not once a user: the block is most of an answer's values, each
--        one Redis writes and the instance reads and allocates.
local users = ARGV
local cfg, adm, refused = config({'rate', 'batch', 'interval_ms', 'capacity'}, {'abandon_ms', 'opens_at'})
if refused then return refused end
local now = clock()
local length = redis.call('ZCARD', K.line)
-- The other lanes' people (everyone's), for capacity and each answer's
-- pace length: an enter changes K.line only.
local lanesLength = everyone(adm, 0)

-- enterOne is one user's enter; the line is length long before it and as
-- long as the second value after it.
local function enterOne(user)
  local held, expired = standing(cfg, adm, user, now, length)
  if held then
    if held[1] == WAITING or held[1] == LANE then markSeen(cfg, adm, user, held[2], now) end
    held[#held + 1] = length + lanesLength
    return held, length
  end
  -- A token whose time is up: forget it, and line up again like anyone else.
  if expired then dropToken(user, 'expired', now) end
  -- Capacity counts every lane (issue 53), the other lanes only where
  -- there may be some (standing's rule).
  local full = length + lanesLength + (opening(cfg, adm) and redis.call('ZCARD', K.pre) or 0) >= tonumber(cfg.capacity)
  if full then return {LINE_FULL, length + lanesLength}, length end
  if adm.units_left == '0' then return {SOLD_OUT, length + lanesLength}, length end
  -- An opening ahead (its pre-queue not yet closed): wait for it, unplaced.
  if (tonumber(cfg.opens_at) or 0) > 0 and not adm.open_state then
    redis.call('ZADD', K.pre, 'NX', now, user)
    return {PRE_QUEUE, length + lanesLength}, length
  end
  if length + lanesLength == 0 then
    redis.call('HSET', K.cfg, 'moved', now) -- someone starts waiting: the front has not stood still
    adm.moved = now
  end
  local ticket = redis.call('INCR', K.seq)
  redis.call('ZADD', K.line, 'NX', ticket, user)
  -- Tickets only grow, so the newcomer is last, behind the unplaced too.
  local position = length + unplaced(adm) + 1
  markSeen(cfg, adm, user, position, now)
  redis.call('HSET', K.joined, user, now .. ' ' .. shown(cfg, adm, now, position, laneShare(adm, 'public')))
  return {WAITING, position, position, ticket, length + 1 + lanesLength}, length + 1
end

local replies = {}
for i = 1, #users do replies[i], length = enterOne(users[i]) end
replies[#users + 1] = pace({}, cfg, adm, now, length + lanesLength)
return replies
