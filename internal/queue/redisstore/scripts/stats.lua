-- stats: the operator's numbers for one queue, read at one instant.
--
-- KEYS[1] line   ZSET user → ticket
-- KEYS[2] cfg    HASH queue config
-- KEYS[3] adm    HASH admission state and counters
-- KEYS[4] texp   ZSET user → token expiry (ms)
-- Reply: {-1} unknown queue, else
--        {length, admitted, consumed, activeTokens, measured, msSinceWindow}
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {-1}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local adm = redis.call('HMGET', KEYS[3], 'admitted', 'consumed', 'measured', 'win_start')
local since = -1
if adm[4] then since = now - tonumber(adm[4]) end
return {
  redis.call('ZCARD', KEYS[1]),
  tonumber(adm[1]) or 0,
  tonumber(adm[2]) or 0,
  redis.call('ZCOUNT', KEYS[4], '(' .. now, '+inf'),
  adm[3] or '0',
  since,
}
