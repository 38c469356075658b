-- set_rate: set the adaptive rate decided on a window (fold_rate.lua),
-- within the queue's bounds, and keep the decision for the next one,
-- unless the rate is no longer adaptive or a later window was decided
-- already. A change is recorded in K.rates.
--
-- KEYS the queue's (the generated text's second line names them); cfg
--      keeps the decision as eff_rate, eff_win, eff_why, eff_p90,
--      eff_knee, eff_cpu, eff_kind (queue.RateDecision)
-- ARGV[1] window, ARGV[2] rate, ARGV[3] why, ARGV[4] p90 (ns), ARGV[5] knee,
-- ARGV[6] calls per user, ARGV[7] kind
-- Reply: {written (1 or 0), the rate in force before}
local window = ARGV[1]
local decided = ARGV[2]
local why = ARGV[3]
local p90, knee, callsPerUser, kind = ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local cfg, adm, refused = config({'rate', 'min_rate', 'max_rate'})
if cfg.adaptive ~= '1' then
  return {0, cfg.rate or '0'}
end
if refused then -- checked before the first write, as config read it
  return refused
end
local before = rateInForce(cfg, adm.eff_rate)
if (tonumber(adm.eff_win) or -1) >= tonumber(window) then
  return {0, tostring(before)}
end
local rate = rateInForce(cfg, decided)
redis.call('HSET', K.cfg, 'eff_rate', rate, 'eff_win', window, 'eff_why', why, 'eff_p90', p90,
  'eff_knee', knee, 'eff_cpu', callsPerUser, 'eff_kind', kind)
if rate ~= before then
  redis.call('LPUSH', K.rates, clock() .. ' ' .. rate .. ' ' .. why)
  redis.call('LTRIM', K.rates, 0, 299)
end
return {1, tostring(before)}
