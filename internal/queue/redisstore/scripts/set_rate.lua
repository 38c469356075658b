-- set_rate: set the adaptive rate decided on a window (fold_rate.lua),
-- within the queue's bounds, and keep the decision for the next one,
-- unless the rate is no longer adaptive or a later window was decided
-- already. A change is recorded in `rates`.
--
-- KEYS[1] cfg   HASH queue config
-- KEYS[2] adm   HASH admission state: eff_rate, eff_win, eff_why, eff_p90,
--               eff_knee, eff_cpu (queue.RateDecision)
-- KEYS[3] rates LIST recent changes of the rate in force: "ms rate why"
-- ARGV[1] window, ARGV[2] rate, ARGV[3] why, ARGV[4] p90 (ns), ARGV[5] knee,
-- ARGV[6] calls per user
-- Reply: {written (1 or 0), the rate in force before}
local cfg = redis.call('HMGET', KEYS[1], 'adaptive', 'rate', 'min_rate', 'max_rate')
local adm = redis.call('HMGET', KEYS[2], 'eff_rate', 'eff_win')
if cfg[1] ~= '1' then
  return {0, cfg[2] or '0'}
end
-- Checked before the first write (Redis does not roll a script back).
if not (tonumber(cfg[2]) and tonumber(cfg[3]) and tonumber(cfg[4])) then
  return redis.error_reply('DAMAGED queue config ' .. KEYS[1] .. ': rate, min_rate or max_rate missing or not a number')
end
local lo, hi = tonumber(cfg[3]), tonumber(cfg[4])
local before = tonumber(cfg[2])
if cfg[1] == '1' and adm[1] then
  before = math.max(lo, math.min(tonumber(adm[1]), hi))
end
if cfg[1] ~= '1' or (tonumber(adm[2]) or -1) >= tonumber(ARGV[1]) then
  return {0, tostring(before)}
end
local rate = math.max(lo, math.min(tonumber(ARGV[2]), hi))
redis.call('HSET', KEYS[2], 'eff_rate', rate, 'eff_win', ARGV[1], 'eff_why', ARGV[3], 'eff_p90', ARGV[4],
  'eff_knee', ARGV[5], 'eff_cpu', ARGV[6])
if rate ~= before then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('LPUSH', KEYS[3], now .. ' ' .. rate .. ' ' .. ARGV[3])
  redis.call('LTRIM', KEYS[3], 0, 299)
end
return {1, tostring(before)}
