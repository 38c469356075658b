-- set_rate: set the adaptive rate decided on a window (fold_rate.lua),
-- within the queue's bounds, and keep the decision for the next one,
-- unless the rate is no longer adaptive or a later window was decided
-- already. A change is recorded in K.rates.
--
-- KEYS the queue's (the generated text's second line names them); cfg
--      keeps the decision as eff_rate, eff_win, eff_why, and what the next
--      decision remembers, eff_mem (queue.RateDecision as JSON, not read
--      here)
-- ARGV[1] window, ARGV[2] rate, ARGV[3] why, ARGV[4] the decision (JSON)
-- Reply: {written (1 or 0), the rate in force before}
local window = ARGV[1]
local decided = ARGV[2]
local why = ARGV[3]
local memory = ARGV[4]
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
redis.call('HSET', K.cfg, 'eff_rate', rate, 'eff_win', window, 'eff_why', why, 'eff_mem', memory)
if rate ~= before then
  redis.call('LPUSH', K.rates, clock() .. ' ' .. rate .. ' ' .. why)
  redis.call('LTRIM', K.rates, 0, 299)
end
return {1, tostring(before)}
