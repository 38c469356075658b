-- status: where a user stands, read in one step with the config the
-- estimate needs. Changes nothing.
--
-- KEYS[1] line   ZSET user → ticket
-- KEYS[2] cfg    HASH queue config
-- KEYS[3] tokens HASH user → entry token
-- KEYS[4] texp   ZSET user → token expiry (ms, Redis TIME)
-- ARGV[1] user id
-- Reply: {-1} unknown queue; an error starting DAMAGED when the config
--        lacks a field this script needs
--        {0, rate, batch, paused, epoch} not in queue
--        {1, position, length, rate, batch, paused, epoch, ticket} waiting
--        {2, token, expiresAtMs, rate, batch, paused, epoch} ready
--        (epoch: the line's, set by put_config.lua; 0 if it has none)
local cfg = redis.call('HMGET', KEYS[2], 'rate', 'batch', 'paused', 'epoch')
if not cfg[1] then
  return {-1}
end
if not (tonumber(cfg[1]) and tonumber(cfg[2])) then
  return redis.error_reply('DAMAGED queue config ' .. KEYS[2] .. ': rate or batch missing or not a number')
end
local user = ARGV[1]
local epoch = tonumber(cfg[4]) or 0

local ticket = redis.call('ZSCORE', KEYS[1], user)
if ticket then
  local rank = redis.call('ZRANK', KEYS[1], user)
  return {1, rank + 1, redis.call('ZCARD', KEYS[1]), cfg[1], cfg[2], cfg[3], epoch, tonumber(ticket)}
end

local token = redis.call('HGET', KEYS[3], user)
if token then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  local exp = tonumber(redis.call('ZSCORE', KEYS[4], user))
  if exp and exp > now then
    return {2, token, exp, cfg[1], cfg[2], cfg[3], epoch}
  end
end
return {0, cfg[1], cfg[2], cfg[3], epoch}
