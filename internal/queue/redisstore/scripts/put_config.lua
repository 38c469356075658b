-- put_config: create a queue or replace its config. If the next admission
-- tick is due further away than one new interval (the interval was just
-- shortened), bring it forward, so a shorter interval applies at once
-- instead of after the old, longer one.
--
-- KEYS[1] cfg  HASH queue config
-- KEYS[2] adm  HASH admission state
-- ARGV    field, value pairs of every setting (queue.StoreFields: the
--         table queue.Settings names each field)
-- Reply: 1
redis.call('HSET', KEYS[1], unpack(ARGV))
local interval = tonumber(redis.call('HGET', KEYS[1], 'interval_ms'))
local next = tonumber(redis.call('HGET', KEYS[2], 'next'))
if next then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if next > now + interval then
    redis.call('HSET', KEYS[2], 'next', now)
  end
end
return 1
