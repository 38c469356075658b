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
--     switched on (queue.AdaptiveStart, its reason in eff_why), with
--     nothing remembered of an earlier backend (eff_knee, eff_cpu,
--     eff_p90), stays within its bounds, and is
--     dropped when switched off; a change
--     of the rate in force is recorded in `rates` (the admin chart);
--   - a new abandon_ms forgets admit.lua's no-show checkpoints, taken for
--     the old one: nobody is judged until the new abandon_ms has passed;
--   - a new opens_at starts a new pre-queue; clearing it while people wait
--     in the pre-queue opens the line now.
--
-- KEYS[1] cfg   HASH queue config
-- KEYS[2] adm   HASH admission state
-- KEYS[3] pre   ZSET the opening's pre-queue
-- KEYS[4] rates LIST recent changes of the rate in force: "ms rate why"
-- ARGV    field, value pairs of every setting (queue.StoreFields: the
--         table queue.Settings names each field)
-- Reply: 1
-- The arguments are checked before the first write (Redis does not roll a
-- script back), and so is what is read of the old config.
local given = {}
for i = 1, #ARGV - 1, 2 do
  given[ARGV[i]] = ARGV[i + 1]
end
if #ARGV % 2 ~= 0 or not tonumber(given.interval_ms) or not tonumber(given.rate)
    or (given.adaptive == '1' and not (tonumber(given.min_rate) and tonumber(given.max_rate))) then
  return redis.error_reply('DAMAGED put_config arguments: field, value pairs with interval_ms, rate (and min_rate, max_rate when adaptive) expected')
end
local before = redis.call('HMGET', KEYS[1], 'rate', 'adaptive', 'min_rate', 'max_rate', 'opens_at', 'abandon_ms')
local adm = redis.call('HMGET', KEYS[2], 'next', 'eff_rate', 'open_state')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function clamp(v, lo, hi)
  return math.max(tonumber(lo), math.min(tonumber(v), tonumber(hi)))
end
local rateBefore = tonumber(before[1])
if before[2] == '1' and tonumber(adm[2]) and tonumber(before[3]) and tonumber(before[4]) then
  rateBefore = clamp(adm[2], before[3], before[4])
end

redis.call('HSET', KEYS[1], unpack(ARGV))
if redis.call('HEXISTS', KEYS[1], 'epoch') == 0 then
  redis.call('HSET', KEYS[1], 'epoch', t[1] .. string.format('%06d', tonumber(t[2])))
end
local cfg = redis.call('HMGET', KEYS[1], 'interval_ms', 'rate', 'adaptive', 'min_rate', 'max_rate', 'opens_at',
  'abandon_ms')

local next = tonumber(adm[1])
if next and next > now + tonumber(cfg[1]) then
  redis.call('HSET', KEYS[2], 'next', now)
end

local rate, why = tonumber(cfg[2]), 'the configured rate'
if cfg[3] == '1' then
  if before[2] == '1' and tonumber(adm[2]) then
    rate, why = clamp(adm[2], cfg[4], cfg[5]), 'adaptive bounds changed'
  else
    rate, why = clamp(tonumber(cfg[2]) / 2, cfg[4], cfg[5]), 'adaptive on, from half the configured rate'
    redis.call('HDEL', KEYS[2], 'eff_knee', 'eff_cpu', 'eff_p90')
    redis.call('HSET', KEYS[2], 'eff_why', why)
  end
  redis.call('HSET', KEYS[2], 'eff_rate', rate)
else
  redis.call('HDEL', KEYS[2], 'eff_rate')
  if before[2] == '1' then why = 'adaptive off: the configured rate' end
end
if not rateBefore or rate ~= rateBefore then
  redis.call('LPUSH', KEYS[4], now .. ' ' .. rate .. ' ' .. why)
  redis.call('LTRIM', KEYS[4], 0, 299)
end

if cfg[7] ~= before[6] then
  redis.call('HDEL', KEYS[2], 'ck1_at', 'ck1_t', 'ck2_at', 'ck2_t', 'ck3_at', 'ck3_t')
end

local state = adm[3]
if cfg[6] ~= before[5] and state ~= 'placing' then
  redis.call('HDEL', KEYS[2], 'open_state')
  state = false
end
if (tonumber(cfg[6]) or 0) == 0 and not state and redis.call('ZCARD', KEYS[3]) > 0 then
  redis.call('HSET', KEYS[1], 'opens_at', now)
end
return 1
