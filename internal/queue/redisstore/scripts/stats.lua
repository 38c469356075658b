-- stats: the operator's numbers for one queue, read at one instant. Changes
-- nothing (a metrics scrape must never write): tokens whose time is up but
-- that no admission tick has swept yet count as expired here, as they will
-- once swept, so the totals add up exactly:
--   entered  = length + admitted + left + abandoned (+ preQueued while an
--              opening is placed: they hold reserved tickets)
--   admitted = consumed + active + expired + returned
--
-- KEYS[1] line   ZSET user → ticket
-- KEYS[2] cfg    HASH queue config
-- KEYS[3] adm    HASH admission state and counters
-- KEYS[4] texp   ZSET user → token expiry (ms)
-- KEYS[5] seq    STRING ticket counter (= joins)
-- KEYS[6] pre    ZSET the opening's pre-queue
-- Reply: {-1} unknown queue, else
--        {length, admitted, consumed, active, measured, msSinceWindow,
--         entered, left, expired, returned, admittedInline, abandoned,
--         preQueued, eff_rate, eff_why}
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {-1}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local unswept = redis.call('ZCOUNT', KEYS[4], '-inf', now)
local adm = redis.call('HMGET', KEYS[3], 'admitted', 'consumed', 'measured', 'win_start',
  'left', 'expired', 'returned', 'inline_total', 'abandoned', 'eff_rate', 'eff_why')
local since = -1
if adm[4] then since = now - tonumber(adm[4]) end
return {
  redis.call('ZCARD', KEYS[1]),
  tonumber(adm[1]) or 0,
  tonumber(adm[2]) or 0,
  redis.call('ZCARD', KEYS[4]) - unswept,
  adm[3] or '0',
  since,
  tonumber(redis.call('GET', KEYS[5])) or 0,
  tonumber(adm[5]) or 0,
  (tonumber(adm[6]) or 0) + unswept,
  tonumber(adm[7]) or 0,
  tonumber(adm[8]) or 0,
  tonumber(adm[9]) or 0,
  redis.call('ZCARD', KEYS[6]),
  adm[10] or '',
  adm[11] or '',
}
