-- join: enter in a lane (issue 53; queue.Store.Join), in one step: a lane
-- the person's claims give, or the lane of an access code redeemed with
-- the place it gives. enter.lua keeps the public, code-less enter (and its
-- batching); this is everyone else's.
--
-- Someone READY or in the shadow line is answered where they stand, a
-- code not even looked at. A code (by its hash, K.codes "lane usesLeft
-- expiresMs") the queue does not hold, expired, or of a lane not in force
-- is INVALID_CODE. One already in the code's lane (or in the pre-queue for
-- it) is answered, the code not used, as is one in the pre-queue of an
-- opening being placed (the unplaced of a lane count in the positions
-- told: they must not grow; before the close, the lane may change); a
-- code with no redemption left is then CODE_USED.
-- Someone waiting in another lane who redeems a code moves to the back of
-- the code's lane with a new ticket (their old one a gap, so nobody's
-- position rises; the place left counts as left, the new ticket as a
-- join, as memstore counts them), or, in an opening's pre-queue, is
-- placed in the code's lane by it (K.prelanes). Without a code, the lane
-- asked for (one not in force is the public) is where a newcomer takes
-- their place; anyone already placed keeps it. Line full, sold out:
-- refused as enter.lua does, before a code is used. A redemption counts
-- on its lane (K.lanestats redeemed:<lane>). A new place in a lane other
-- than the public takes the next ticket of the one counter, is a gap of
-- the public line (K.left), and sets adm.lane_shares if the queue has
-- none yet, for standing to look in K.lanes (K.prelanes) from now on.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] user id, ARGV[2] the lane asked for ('' the public), ARGV[3]
--         the code's hash ('' none)
-- Reply: {UNKNOWN_QUEUE}; an error starting DAMAGED (nothing written);
--        {INVALID_CODE}; {CODE_USED}; {LINE_FULL}; {SOLD_OUT}; else
--        standing's (WAITING, LANE, READY, PRE_QUEUE, LANE_PRE_QUEUE,
--        SHADOW) then the
--        pace block, its length every lane's (everyone)
local user, asked, hash = ARGV[1], ARGV[2], ARGV[3]
local cfg, adm, refused = config({'rate', 'batch', 'interval_ms', 'capacity'}, {'abandon_ms', 'opens_at'})
if refused then return refused end
local now = clock()
local length = redis.call('ZCARD', K.line)
local held, expired = standing(cfg, adm, user, now, length)
local kind = held and held[1]
if kind == READY or kind == SHADOW then return pace(held, cfg, adm, now, everyone(adm, length)) end -- a code not even looked at
local lane, code = asked, nil
if hash ~= '' then
  local name, uses, exp = string.match(redis.call('HGET', K.codes, hash) or '', '^(%S+) (%-?%d+) (%d+)$')
  -- Fail closed: a code of a lane not in force (taken away) is invalid,
  -- not spent into a lane served only from what others leave.
  if not name or (tonumber(exp) > 0 and tonumber(exp) <= now) or not inForce(cfg, adm, name) then return {INVALID_CODE} end
  lane, code = name, {tonumber(uses), exp}
elseif not inForce(cfg, adm, asked) then
  lane = 'public' -- a lane not in force
end
if lane == '' then lane = 'public' end
local from = (kind == LANE or kind == LANE_PRE_QUEUE) and held[#held] or 'public'
local placing = (kind == PRE_QUEUE or kind == LANE_PRE_QUEUE) and adm.open_state == 'placing'
if held and (not code or from == lane or placing) then -- kept: no code, in the code's lane already, or being placed
  if kind == WAITING or kind == LANE then markSeen(cfg, adm, user, held[2], now) end
  return pace(held, cfg, adm, now, everyone(adm, length))
end
if code and code[1] <= 0 then return {CODE_USED} end
if expired then dropToken(user, 'expired', now) end
local others = redis.call('ZCARD', K.lanes)
if not held then
  if length + others + (opening(cfg, adm) and redis.call('ZCARD', K.pre) or 0) >= tonumber(cfg.capacity) then return {LINE_FULL} end
  if adm.units_left == '0' then return {SOLD_OUT} end
end
if code then
  redis.call('HSET', K.codes, hash, lane .. ' ' .. (code[1] - 1) .. ' ' .. code[2])
  redis.call('HINCRBY', K.lanestats, 'redeemed:' .. lane, 1)
end
if kind == PRE_QUEUE or kind == LANE_PRE_QUEUE or (not held and (tonumber(cfg.opens_at) or 0) > 0 and not adm.open_state) then
  -- The opening places them, in their lane (place.lua).
  redis.call('ZADD', K.pre, 'NX', now, user)
  if lane == 'public' then
    redis.call('HDEL', K.prelanes, user)
    return pace({PRE_QUEUE}, cfg, adm, now, length + others)
  end
  redis.call('HSET', K.prelanes, user, lane)
  if not adm.lane_shares then redis.call('HSET', K.cfg, 'lane_shares', '-') end -- standing looks there from now on
  return pace({LANE_PRE_QUEUE, lane}, cfg, adm, now, length + others)
end
if held then -- a move: the old place leaves a gap, the person takes a new one
  if kind == WAITING then
    local old = redis.call('ZSCORE', K.line, user)
    redis.call('ZREM', K.line, user)
    if unmark(user, tonumber(old), false) then redis.call('ZADD', K.left, old, old) end
    length = length - 1
  else
    redis.call('ZREM', K.lanes, user)
    others = others - 1
  end
  redis.call('HINCRBY', K.cfg, 'left', 1) -- the place left (the new ticket counts a join)
end
if length + others == 0 then
  redis.call('HSET', K.cfg, 'moved', now) -- someone starts waiting (enter.lua)
  adm.moved = now
end
local ticket = redis.call('INCR', K.seq)
local placed
if lane == 'public' then
  redis.call('ZADD', K.line, ticket, user)
  local n = unplaced(adm)
  length = length + 1
  placed = {WAITING, length + n, length + n, ticket}
else
  local score = laneId(lane, true) * BAND + ticket
  redis.call('ZADD', K.lanes, scoreText(score), user)
  redis.call('ZADD', K.left, ticket, ticket) -- a gap in the public line
  if not adm.lane_shares then
    redis.call('HSET', K.cfg, 'lane_shares', '-')
    adm.lane_shares = '-'
  end
  placed = laneStanding(adm, score)
end
markSeen(cfg, adm, user, placed[2], now)
redis.call('HSET', K.joined, user, now .. ' ' .. shown(cfg, adm, now, placed[2], laneShare(adm, lane)))
return pace(placed, cfg, adm, now, length + others + (lane == 'public' and 0 or 1)) -- everyone, as counted here
