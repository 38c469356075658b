-- snapshot: the line's head, last ticket, length, the leavers above the head
-- and the config, in one step, so an instance can answer status polls by
-- arithmetic for a moment (queue.Snapshot). Changes nothing.
--
-- KEYS[1] line   ZSET user → ticket
-- KEYS[2] seq    STRING ticket counter
-- KEYS[3] cfg    HASH queue config
-- KEYS[4] left   ZSET tickets of users who left the line (see leave.lua)
-- ARGV[1] at most this many leavers; one more is read to tell "more"
-- Reply: {-1} unknown queue; an error starting DAMAGED when the config
--        lacks a field this script needs
--        {1, head, last, length, rate, batch, paused, epoch, leaver1, ...}
--        head is 0 when no one waits; epoch is the line's, set by
--        put_config.lua (0 if it has none).
local cfg = redis.call('HMGET', KEYS[3], 'rate', 'batch', 'paused', 'epoch')
if not cfg[1] then
  return {-1}
end
if not (tonumber(cfg[1]) and tonumber(cfg[2])) then
  return redis.error_reply('DAMAGED queue config ' .. KEYS[3] .. ': rate or batch missing or not a number')
end
local reply = {1, 0, tonumber(redis.call('GET', KEYS[2]) or '0'), redis.call('ZCARD', KEYS[1]),
  cfg[1], cfg[2], cfg[3], tonumber(cfg[4]) or 0}
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if head[2] then
  reply[2] = tonumber(head[2])
  local left = redis.call('ZRANGEBYSCORE', KEYS[4], head[2], '+inf', 'LIMIT', 0, tonumber(ARGV[1]) + 1)
  for i = 1, #left do
    reply[#reply + 1] = tonumber(left[i])
  end
end
return reply
