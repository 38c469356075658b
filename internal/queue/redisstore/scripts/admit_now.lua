-- admit_now: let a user straight in while the line is quiet (gateway mode:
-- nobody should see a waiting page on an ordinary day).
--
-- A user already in line keeps their place; one holding a valid token gets
-- it back. Anyone else is admitted at once, with the token given, only if
-- nobody waits, the queue is not paused, the next admission tick still has
-- budget (rate × interval plus the carried fraction, at most the batch,
-- less what was admitted this way since the last tick: admit.lua takes
-- these from that tick's quota, so the global rate holds) and the live-token
-- cap has room. Such a user counts as having entered and been admitted, so
-- the totals in stats.lua still balance; their ticket is below any later
-- one, so snapshots are unaffected.
--
-- KEYS[1] line   ZSET user → ticket
-- KEYS[2] seq    STRING ticket counter
-- KEYS[3] cfg    HASH queue config
-- KEYS[4] adm    HASH admission state and counters
-- KEYS[5] tokens HASH user → entry token
-- KEYS[6] texp   ZSET user → token expiry (ms, Redis TIME)
-- ARGV[1] user id
-- ARGV[2] a fresh token, written if the user is admitted
-- Reply: {-1} unknown queue; an error starting DAMAGED (nothing written)
--        when the config lacks a field this script needs
--        {0, rate, batch, paused, epoch} not admitted (the line is busy)
--        {1, position, length, rate, batch, paused, epoch, ticket} waiting
--        {2, token, expiresAtMs, rate, batch, paused, epoch} ready
--        (epoch: the line's, set by put_config.lua; 0 if it has none)
local cfg = redis.call('HMGET', KEYS[3], 'rate', 'batch', 'interval_ms', 'ttl_ms', 'paused', 'max_active', 'epoch')
if not cfg[1] then
  return {-1}
end
local rate, batch, interval, ttl = tonumber(cfg[1]), tonumber(cfg[2]), tonumber(cfg[3]), tonumber(cfg[4])
-- Checked before the first write (Redis does not roll a script back).
if not (rate and batch and interval and ttl) or (cfg[6] and not tonumber(cfg[6])) then
  return redis.error_reply('DAMAGED queue config ' .. KEYS[3] .. ': rate, batch, interval_ms, ttl_ms or max_active missing or not a number')
end
local user = ARGV[1]
local epoch = tonumber(cfg[7]) or 0

local ticket = redis.call('ZSCORE', KEYS[1], user)
if ticket then
  local rank = redis.call('ZRANK', KEYS[1], user)
  return {1, rank + 1, redis.call('ZCARD', KEYS[1]), cfg[1], cfg[2], cfg[5], epoch, tonumber(ticket)}
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local held = redis.call('HGET', KEYS[5], user)
if held then
  local exp = tonumber(redis.call('ZSCORE', KEYS[6], user))
  if exp and exp > now then
    return {2, held, exp, cfg[1], cfg[2], cfg[5], epoch}
  end
end

local busy = {0, cfg[1], cfg[2], cfg[5], epoch}
if cfg[5] == '1' or redis.call('ZCARD', KEYS[1]) > 0 then
  return busy
end
local adm = redis.call('HMGET', KEYS[4], 'carry', 'inline')
local quota = math.min(math.floor(rate * interval / 1000 + (tonumber(adm[1]) or 0)), batch)
if (tonumber(adm[2]) or 0) >= quota then
  return busy
end
local maxActive = tonumber(cfg[6]) or 0
if maxActive > 0 and redis.call('ZCOUNT', KEYS[6], '(' .. now, '+inf') >= maxActive then
  return busy
end

if held then -- expired: forget it, as enter.lua does
  redis.call('HINCRBY', KEYS[4], 'expired', 1)
end
redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[5], user, ARGV[2])
redis.call('ZADD', KEYS[6], now + ttl, user)
redis.call('HINCRBY', KEYS[4], 'inline', 1)
redis.call('HINCRBY', KEYS[4], 'inline_total', 1)
redis.call('HINCRBY', KEYS[4], 'admitted', 1)
redis.call('HINCRBY', KEYS[4], 'win_count', 1)
return {2, ARGV[2], now + ttl, cfg[1], cfg[2], cfg[5], epoch}
