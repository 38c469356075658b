-- put_config: create a queue or replace its config. If the next admission
-- tick is due further away than one new interval (the interval was just
-- shortened), bring it forward, so a shorter interval applies at once
-- instead of after the old, longer one. A queue without an epoch (a new
-- one: created, or created again after Redis lost it) gets one from TIME
-- in microseconds, which instances compare to tell one life of the line
-- from the next (queue.Snapshot.Epoch).
--
-- KEYS[1] cfg  HASH queue config
-- KEYS[2] adm  HASH admission state
-- ARGV    field, value pairs: rate, batch, interval_ms, capacity, ttl_ms,
--         max_active, paused, derivation
-- Reply: 1
-- The interval is read from the arguments and checked before the first
-- write (Redis does not roll a script back).
local interval
for i = 1, #ARGV - 1, 2 do
  if ARGV[i] == 'interval_ms' then interval = tonumber(ARGV[i + 1]) end
end
if not interval or #ARGV % 2 ~= 0 then
  return redis.error_reply('DAMAGED put_config arguments: field, value pairs with interval_ms expected')
end
redis.call('HSET', KEYS[1], unpack(ARGV))
local t = redis.call('TIME')
if redis.call('HEXISTS', KEYS[1], 'epoch') == 0 then
  redis.call('HSET', KEYS[1], 'epoch', t[1] .. string.format('%06d', tonumber(t[2])))
end
local next = tonumber(redis.call('HGET', KEYS[2], 'next'))
if next then
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  if next > now + interval then
    redis.call('HSET', KEYS[2], 'next', now)
  end
end
return 1
