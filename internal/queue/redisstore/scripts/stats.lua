-- stats: the operator's numbers for one queue, read at one instant. Expired
-- tokens are forgotten first; the totals add up exactly:
--   entered  = length + admitted + left
--   admitted = consumed + active + expired + returned
--
-- KEYS[1] line   ZSET user → ticket
-- KEYS[2] cfg    HASH queue config
-- KEYS[3] adm    HASH admission state and counters
-- KEYS[4] tokens HASH user → entry token
-- KEYS[5] texp   ZSET user → token expiry (ms)
-- KEYS[6] seq    STRING ticket counter (= joins)
-- Reply: {-1} unknown queue, else
--        {length, admitted, consumed, active, measured, msSinceWindow,
--         entered, left, expired, returned, admittedInline}
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {-1}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- At most 10,000 per call, so one scrape never blocks Redis for long; the
-- admission ticks sweep too, and the totals balance either way (a token not
-- yet swept still counts as active).
for _ = 1, 10 do
  local expired = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now, 'LIMIT', 0, 1000)
  if #expired == 0 then break end
  redis.call('HDEL', KEYS[4], unpack(expired))
  redis.call('ZREM', KEYS[5], unpack(expired))
  redis.call('HINCRBY', KEYS[3], 'expired', #expired)
end

local adm = redis.call('HMGET', KEYS[3], 'admitted', 'consumed', 'measured', 'win_start',
  'left', 'expired', 'returned', 'inline_total')
local since = -1
if adm[4] then since = now - tonumber(adm[4]) end
return {
  redis.call('ZCARD', KEYS[1]),
  tonumber(adm[1]) or 0,
  tonumber(adm[2]) or 0,
  redis.call('ZCARD', KEYS[5]),
  adm[3] or '0',
  since,
  tonumber(redis.call('GET', KEYS[6])) or 0,
  tonumber(adm[5]) or 0,
  tonumber(adm[6]) or 0,
  tonumber(adm[7]) or 0,
  tonumber(adm[8]) or 0,
}
