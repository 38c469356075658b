-- enter: put a user in line, or tell them where they already stand.
-- Already in line → same place; valid token → READY; line full → refused;
-- otherwise take the next ticket (INCR, never a clock) and join. One script,
-- so no request can slip between the checks and the join.
--
-- KEYS[1] line   ZSET user → ticket
-- KEYS[2] seq    STRING ticket counter
-- KEYS[3] cfg    HASH queue config
-- KEYS[4] tokens HASH user → entry token
-- KEYS[5] texp   ZSET user → token expiry (ms, Redis TIME)
-- KEYS[6] adm    HASH counters
-- ARGV[1] user id
-- Reply: {-1} unknown queue; an error starting DAMAGED (nothing written)
--        when the config lacks a field this script needs
--        {-2, length} line full
--        {1, position, length, rate, batch, paused, epoch, ticket} waiting
--        {2, token, expiresAtMs, rate, batch, paused, epoch} ready
--        (epoch: the line's, set by put_config.lua; 0 if it has none)
local cfg = redis.call('HMGET', KEYS[3], 'rate', 'batch', 'capacity', 'paused', 'epoch')
if not cfg[1] then
  return {-1}
end
-- Checked before the first write (Redis does not roll a script back).
if not (tonumber(cfg[1]) and tonumber(cfg[2]) and tonumber(cfg[3])) then
  return redis.error_reply('DAMAGED queue config ' .. KEYS[3] .. ': rate, batch or capacity missing or not a number')
end
local user = ARGV[1]
local epoch = tonumber(cfg[5]) or 0

local held = redis.call('ZSCORE', KEYS[1], user)
if held then
  local rank = redis.call('ZRANK', KEYS[1], user)
  return {1, rank + 1, redis.call('ZCARD', KEYS[1]), cfg[1], cfg[2], cfg[4], epoch, tonumber(held)}
end

local token = redis.call('HGET', KEYS[4], user)
if token then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local exp = tonumber(redis.call('ZSCORE', KEYS[5], user))
  if exp and exp > now then
    return {2, token, exp, cfg[1], cfg[2], cfg[4], epoch}
  end
  -- Expired: forget it, and line up again like anyone else.
  redis.call('HDEL', KEYS[4], user)
  redis.call('ZREM', KEYS[5], user)
  redis.call('HINCRBY', KEYS[6], 'expired', 1)
end

local length = redis.call('ZCARD', KEYS[1])
if length >= tonumber(cfg[3]) then
  return {-2, length}
end
local ticket = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[1], 'NX', ticket, user)
-- Tickets only grow, so the newcomer is last.
return {1, length + 1, length + 1, cfg[1], cfg[2], cfg[4], epoch, ticket}
