-- roll: apply one instance's write to a queue's row of a minute
-- (rollup.Write; its twin is memstore's Store.roll): add to fields, raise
-- them to at least, lower them to at most, set them; then the row is kept
-- for keep from now. Every part is safe to repeat or to race with another
-- instance's (rollup's package doc), so no instance claims a minute.
--
-- KEYS the row ({q}:minute:<ms>), alone: the script names none of the
--      queue's keys (a row outlives its queue until its time is up)
-- ARGV[1] keep (ms, ≥ 1)
-- ARGV[2] the write, JSON (roll.go's rollWrite): add, max, min {field: n},
--         set {field: value}
-- Reply: 1
local row = KEYS[#KEYS]
local keep = ARGV[1]
local w = cjson.decode(ARGV[2])
for field, n in pairs(w.add) do
  redis.call('HINCRBY', row, field, n)
end
for field, n in pairs(w.max) do
  local was = tonumber(redis.call('HGET', row, field))
  if not was or was < n then redis.call('HSET', row, field, n) end
end
for field, n in pairs(w.min) do
  local was = tonumber(redis.call('HGET', row, field))
  if not was or was > n then redis.call('HSET', row, field, n) end
end
for field, value in pairs(w.set) do
  redis.call('HSET', row, field, value)
end
redis.call('PEXPIRE', row, keep)
return 1
