-- put_config: create a queue or replace its config, and keep the admission
-- state in step with it:
--   - a queue without an epoch (a new one: created, or created again after
--     Redis lost it) gets one from TIME in microseconds, which instances
--     compare to tell one life of the line from the next
--     (queue.Snapshot.Epoch);
--   - if the next tick is due further away than one new interval (the
--     interval was just shortened), bring it forward, so a shorter interval
--     applies at once instead of after the old, longer one;
--   - the adaptive rate starts from half the configured rate when it is
--     switched on (queue.AdaptiveStart, its reason in eff_why), with nothing
--     remembered of an earlier backend (eff_knee, eff_cpu, eff_p90,
--     eff_kind), stays within its bounds, and is dropped when switched off;
--     a change of the rate in force is recorded in K.rates (the admin chart);
--   - a new abandon_ms forgets the no-show checkpoints taken for the old one
--     (queue.TickState): nobody is judged until the new one has passed;
--   - a new opens_at starts a new pre-queue; clearing it while people wait
--     in the pre-queue opens the line now.
--
-- KEYS the queue's (prelude)
-- ARGV    field, value pairs of every setting (queue.StoreFields: the
--         table queue.Settings names each field)
-- Reply: 1
-- The arguments are checked before the first write (Redis does not roll a
-- script back), and so is what is read of the old config.
local cfg = {}
for i = 1, #ARGV - 1, 2 do
  cfg[ARGV[i]] = ARGV[i + 1]
end
if #ARGV % 2 ~= 0 or damaged(cfg, cfg.adaptive == '1' and {'interval_ms', 'rate', 'min_rate', 'max_rate'} or {'interval_ms', 'rate'}) then
  return redis.error_reply('DAMAGED put_config arguments: field, value pairs with interval_ms, rate (and min_rate, max_rate when adaptive) expected')
end
local before = hash(K.cfg, 'rate', 'adaptive', 'min_rate', 'max_rate', 'opens_at', 'abandon_ms')
local adm = hash(K.adm, 'next', 'eff_rate', 'open_state')
local now, t = clock()
local rateBefore = before.rate and rateInForce(before, adm.eff_rate)

redis.call('HSET', K.cfg, unpack(ARGV))
if redis.call('HEXISTS', K.cfg, 'epoch') == 0 then
  redis.call('HSET', K.cfg, 'epoch', t[1] .. string.format('%06d', tonumber(t[2])))
end
if tonumber(adm.next) and tonumber(adm.next) > now + tonumber(cfg.interval_ms) then
  redis.call('HSET', K.adm, 'next', now)
end

local rate, why = tonumber(cfg.rate), 'the configured rate'
if cfg.adaptive == '1' then
  if before.adaptive == '1' and tonumber(adm.eff_rate) then
    rate, why = rateInForce(cfg, adm.eff_rate), 'adaptive bounds changed'
  else
    rate, why = rateInForce(cfg, rate / 2), 'adaptive on, from half the configured rate'
    redis.call('HDEL', K.adm, 'eff_knee', 'eff_cpu', 'eff_p90', 'eff_kind')
    redis.call('HSET', K.adm, 'eff_why', why)
  end
  redis.call('HSET', K.adm, 'eff_rate', rate)
else
  redis.call('HDEL', K.adm, 'eff_rate')
  if before.adaptive == '1' then why = 'adaptive off: the configured rate' end
end
if not rateBefore or rate ~= rateBefore then
  redis.call('LPUSH', K.rates, now .. ' ' .. rate .. ' ' .. why)
  redis.call('LTRIM', K.rates, 0, 299)
end

if cfg.abandon_ms ~= before.abandon_ms then
  redis.call('HDEL', K.adm, 'checkpoints')
end
local state = adm.open_state
if cfg.opens_at ~= before.opens_at and state ~= 'placing' then
  redis.call('HDEL', K.adm, 'open_state')
  state = false
end
if (tonumber(cfg.opens_at) or 0) == 0 and not state and redis.call('ZCARD', K.pre) > 0 then
  redis.call('HSET', K.cfg, 'opens_at', now)
end
return 1
