-- open_due: is the queue's opening due by Redis TIME? When it is, close the
-- pre-queue (reserve a ticket for each of its users, open_first to
-- open_end: whoever enters from now on is behind them all; its users kept
-- as they are in K.closed, the draw's participants whoever leaves after)
-- and give the caller the lease to place them in the line (place.lua), in
-- the order of the opening's draw (kept by save_draw.lua). A lease that
-- lapsed (its holder died) is taken over; placing goes on from open_next,
-- the first reserved ticket not yet placed, in the order already drawn.
--
-- KEYS the queue's (the generated text's second line names them): cfg's
--      opens_at, epoch, open_state ('placing', 'open'; none: pending while
--      opens_at is set), open_at (the instant of the opening closed),
--      open_first, open_next, open_end, open_owner,
--      open_lease; pre, user → arrival (ms); closed, the pre-queue as it
--      closed (none from an older version: the pre-queue as it is)
-- ARGV[1] owner (one instance's)
-- ARGV[2] lease (ms)
-- Reply: {UNKNOWN_QUEUE}
--        {NO_OPENING} no opening pending
--        {NOT_DUE, inMs} pending, due in inMs
--        {DUE, opensAtMs, epoch, first, next, user1, ...} the caller holds
--        the lease; the opening, the queue's life, the first reserved
--        ticket and the next to place; the users of the pre-queue when
--        it closed, whether or not they left (or were placed) since, in
--        arrival order
--        {PLACED_ELSEWHERE} another instance is placing it
local owner = ARGV[1]
local leaseMs = tonumber(ARGV[2])
local cfg, adm, refused = config()
if refused then return refused end
local opensAt = tonumber(cfg.opens_at) or 0
if adm.open_state == 'open' or (opensAt == 0 and not adm.open_state) then
  return {NO_OPENING}
end
local now = clock()
-- An opening an older version began placing has no open_first: its draw
-- starts where that version stopped.
local first, next = adm.open_first or adm.open_next, adm.open_next
if not adm.open_state then
  if now < opensAt then
    return {NOT_DUE, opensAt - now}
  end
  local p = redis.call('ZCARD', K.pre)
  if p == 0 then
    redis.call('HSET', K.cfg, 'open_state', 'open')
    return {NO_OPENING}
  end
  local last = redis.call('INCRBY', K.seq, p)
  first, next = last - p + 1, last - p + 1
  redis.call('HSET', K.cfg, 'open_state', 'placing', 'open_at', opensAt, 'open_first', first, 'open_next', next, 'open_end', last)
  -- Who takes part is closed now, not when the draw is made: that may be
  -- after the beacon's round is out (OpenLine waits for it), and a shop's
  -- puppets leaving then would choose among the orders.
  redis.call('COPY', K.pre, K.closed, 'REPLACE')
else
  -- The opening being placed is the one closed (open_at), whatever opens_at
  -- says since: an operator may move it meanwhile, and a takeover must
  -- still draw this one's order. An older version kept no open_at.
  opensAt = tonumber(adm.open_at) or opensAt
end
if adm.open_state and adm.open_owner ~= owner and now < (tonumber(adm.open_lease) or 0) then
  return {PLACED_ELSEWHERE}
end
redis.call('HSET', K.cfg, 'open_owner', owner, 'open_lease', now + leaseMs)
local closed = redis.call('ZRANGE', K.closed, 0, -1)
if #closed == 0 then
  closed = redis.call('ZRANGE', K.pre, 0, -1) -- closed by an older version
end
return append({DUE, opensAt, cfg.epoch, tonumber(first), tonumber(next)}, closed)
