-- open_due: is the queue's opening due by Redis TIME? When it is, close the
-- pre-queue (reserve a ticket for each of its users: whoever enters from now
-- on is behind them all) and give the caller the lease to place them in the
-- line (place.lua), in an order it draws. A lease that lapsed (its holder
-- died) is taken over; the users not yet placed are drawn again.
--
-- KEYS[1] cfg  HASH queue config (opens_at, ms)
-- KEYS[2] adm  HASH open_state ('placing', 'open'; none: pending while
--              opens_at is set), open_next, open_end, open_owner, open_lease
-- KEYS[3] pre  ZSET the pre-queue, user → arrival (ms)
-- KEYS[4] seq  STRING ticket counter
-- ARGV[1] owner (one instance's)
-- ARGV[2] lease (ms)
-- Reply: {-1} unknown queue
--        {0} no opening pending
--        {1, inMs} pending, due in inMs
--        {2, user1, ...} due: the caller holds the lease; these wait to be
--        placed, in arrival order
--        {3} another instance is placing it
local cfg = redis.call('HMGET', KEYS[1], 'opens_at', 'rate')
if not cfg[2] then
  return {-1}
end
local opensAt = tonumber(cfg[1]) or 0
local adm = redis.call('HMGET', KEYS[2], 'open_state', 'open_owner', 'open_lease')
if adm[1] == 'open' or (opensAt == 0 and not adm[1]) then
  return {0}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not adm[1] then
  if now < opensAt then
    return {1, opensAt - now}
  end
  local p = redis.call('ZCARD', KEYS[3])
  if p == 0 then
    redis.call('HSET', KEYS[2], 'open_state', 'open')
    return {0}
  end
  local last = redis.call('INCRBY', KEYS[4], p)
  redis.call('HSET', KEYS[2], 'open_state', 'placing', 'open_next', last - p + 1, 'open_end', last)
elseif adm[2] ~= ARGV[1] and now < (tonumber(adm[3]) or 0) then
  return {3}
end
redis.call('HSET', KEYS[2], 'open_owner', ARGV[1], 'open_lease', now + tonumber(ARGV[2]))
local reply = {2}
for _, user in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  reply[#reply + 1] = user
end
return reply
