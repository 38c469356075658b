-- open_due: is the queue's opening due by Redis TIME? When it is, close the
-- pre-queue (reserve a ticket for each of its users: whoever enters from now
-- on is behind them all) and give the caller the lease to place them in the
-- line (place.lua), in an order it draws. A lease that lapsed (its holder
-- died) is taken over; the users not yet placed are drawn again.
--
-- KEYS the queue's (prelude): cfg's opens_at (ms); in adm, open_state
--      ('placing', 'open'; none: pending while opens_at is set), open_next,
--      open_end, open_owner, open_lease; pre, user → arrival (ms)
-- ARGV[1] owner (one instance's)
-- ARGV[2] lease (ms)
-- Reply: {-1} unknown queue
--        {0} no opening pending
--        {1, inMs} pending, due in inMs
--        {2, user1, ...} due: the caller holds the lease; these wait to be
--        placed, in arrival order
--        {3} another instance is placing it
local cfg = hash(K.cfg, 'opens_at', 'rate')
if not cfg.rate then
  return {-1}
end
local opensAt = tonumber(cfg.opens_at) or 0
local adm = hash(K.adm, 'open_state', 'open_owner', 'open_lease')
if adm.open_state == 'open' or (opensAt == 0 and not adm.open_state) then
  return {0}
end
local now = clock()
if not adm.open_state then
  if now < opensAt then
    return {1, opensAt - now}
  end
  local p = redis.call('ZCARD', K.pre)
  if p == 0 then
    redis.call('HSET', K.adm, 'open_state', 'open')
    return {0}
  end
  local last = redis.call('INCRBY', K.seq, p)
  redis.call('HSET', K.adm, 'open_state', 'placing', 'open_next', last - p + 1, 'open_end', last)
elseif adm.open_owner ~= ARGV[1] and now < (tonumber(adm.open_lease) or 0) then
  return {3}
end
redis.call('HSET', K.adm, 'open_owner', ARGV[1], 'open_lease', now + tonumber(ARGV[2]))
local reply = {2}
for _, user in ipairs(redis.call('ZRANGE', K.pre, 0, -1)) do
  reply[#reply + 1] = user
end
return reply
