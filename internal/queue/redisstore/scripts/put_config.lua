-- put_config: create a queue or replace its config, and keep the admission
-- state in step with it:
--   - a queue without an epoch (a new one: created, or created again after
--     Redis lost it) gets one from TIME in microseconds, which instances
--     compare to tell one life of the line from the next
--     (queue.Snapshot.Epoch);
--   - if the next tick is due further away than one new interval (the
--     interval was just shortened), bring it forward, so a shorter interval
--     applies at once instead of after the old, longer one;
--   - the adaptive rate starts from the configured rate when it is
--     switched on (queue.AdaptiveStart, its reason in eff_why), with nothing
--     remembered of an earlier backend (eff_mem), stays within its bounds,
--     and is dropped when switched off;
--     a change of the rate in force is recorded in K.rates (the admin chart);
--   - a new abandon_ms forgets the no-show checkpoints taken for the old one
--     (admission.TickState): nobody is judged until the new one has passed;
--   - a new opens_at starts a new pre-queue; clearing it while people wait
--     in the pre-queue opens the line now;
--   - pausing or resuming an existing queue, or changing its method, is
--     stamped with the time (paused_at, method_at: queue.Changes), so every
--     instance names the change alike for the shop's events.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV    field, value pairs of every setting (queue.StoreFields: the
--         table queue.Settings names each field)
-- Reply: 1
-- The arguments are checked before the first write (Redis does not roll a
-- script back).
local fields = ARGV
local new = {}
for i = 1, #fields - 1, 2 do
  new[fields[i]] = fields[i + 1]
end
if #fields % 2 ~= 0 or not (tonumber(new.interval_ms) and tonumber(new.rate)) or
    new.adaptive == '1' and not (tonumber(new.min_rate) and tonumber(new.max_rate)) then
  return redis.error_reply('DAMAGED put_config arguments: field, value pairs with interval_ms, rate (and min_rate, max_rate when adaptive) expected')
end
local cfg, adm = config() -- as it was
local rateBefore = cfg.rate and rateInForce(cfg, adm.eff_rate)
local adaptiveBefore, opensBefore, abandonBefore = cfg.adaptive, cfg.opens_at, cfg.abandon_ms
local existed, pausedBefore, methodBefore = cfg.epoch, cfg.paused, cfg.method
local now, t = clock()

redis.call('HSET', K.cfg, unpack(fields))
if not existed then
  redis.call('HSET', K.cfg, 'epoch', t[1] .. string.format('%06d', tonumber(t[2])))
end
cfg = config() -- as it is now
if existed and cfg.paused ~= pausedBefore then
  redis.call('HSET', K.cfg, 'paused_at', now)
end
if existed and cfg.method ~= methodBefore then
  redis.call('HSET', K.cfg, 'method_at', now)
end
if tonumber(adm.next) and tonumber(adm.next) > now + tonumber(cfg.interval_ms) then
  redis.call('HSET', K.cfg, 'next', now)
end

local rate, why = tonumber(cfg.rate), 'the configured rate'
if cfg.adaptive == '1' then
  if adaptiveBefore == '1' and tonumber(adm.eff_rate) then
    rate, why = rateInForce(cfg, adm.eff_rate), 'adaptive bounds changed'
  else
    rate, why = rateInForce(cfg, rate), 'adaptive on, from the configured rate'
    redis.call('HDEL', K.cfg, 'eff_mem')
    redis.call('HSET', K.cfg, 'eff_why', why)
  end
  redis.call('HSET', K.cfg, 'eff_rate', rate)
else
  redis.call('HDEL', K.cfg, 'eff_rate')
  if adaptiveBefore == '1' then why = 'adaptive off: the configured rate' end
end
-- Switching the adaptive rate on or off is a change in the chart even at
-- the same number: what sets the rate from now on is not the same.
if not rateBefore or rate ~= rateBefore or (cfg.adaptive == '1') ~= (adaptiveBefore == '1') then
  redis.call('LPUSH', K.rates, now .. ' ' .. rate .. ' ' .. why)
  redis.call('LTRIM', K.rates, 0, 299)
end

if cfg.abandon_ms ~= abandonBefore then
  redis.call('HDEL', K.cfg, 'checkpoints')
end
local state = adm.open_state
if cfg.opens_at ~= opensBefore and state ~= 'placing' then
  redis.call('HDEL', K.cfg, 'open_state')
  state = false
end
if (tonumber(cfg.opens_at) or 0) == 0 and not state and redis.call('ZCARD', K.pre) > 0 then
  redis.call('HSET', K.cfg, 'opens_at', now)
end
return 1
