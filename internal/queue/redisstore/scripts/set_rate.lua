-- set_rate: set the adaptive rate decided on a window (fold_rate.lua),
-- within the queue's bounds, and keep the decision for the next one,
-- unless the rate is no longer adaptive or a later window was decided
-- already. A change is recorded in K.rates.
--
-- KEYS the queue's (prelude); adm keeps the decision as eff_rate, eff_win,
--      eff_why, eff_p90, eff_knee, eff_cpu, eff_kind (queue.RateDecision)
-- ARGV[1] window, ARGV[2] rate, ARGV[3] why, ARGV[4] p90 (ns), ARGV[5] knee,
-- ARGV[6] calls per user, ARGV[7] kind
-- Reply: {written (1 or 0), the rate in force before}
local cfg = hash(K.cfg, 'adaptive', 'rate', 'min_rate', 'max_rate')
local adm = hash(K.adm, 'eff_rate', 'eff_win')
if cfg.adaptive ~= '1' then
  return {0, cfg.rate or '0'}
end
-- Checked before the first write (Redis does not roll a script back).
local bad = damaged(cfg, {'rate', 'min_rate', 'max_rate'})
if bad then
  return bad
end
local before = rateInForce(cfg, adm.eff_rate)
if (tonumber(adm.eff_win) or -1) >= tonumber(ARGV[1]) then
  return {0, tostring(before)}
end
local rate = rateInForce(cfg, ARGV[2])
redis.call('HSET', K.adm, 'eff_rate', rate, 'eff_win', ARGV[1], 'eff_why', ARGV[3], 'eff_p90', ARGV[4],
  'eff_knee', ARGV[5], 'eff_cpu', ARGV[6], 'eff_kind', ARGV[7])
if rate ~= before then
  redis.call('LPUSH', K.rates, clock() .. ' ' .. rate .. ' ' .. ARGV[3])
  redis.call('LTRIM', K.rates, 0, 299)
end
return {1, tostring(before)}
