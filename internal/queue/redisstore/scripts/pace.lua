-- pace: not a script of its own. The store puts it in front of enter.lua,
-- status.lua and snapshot.lua, which answer with the line's pace read in
-- the same step as the position it goes with.
--
-- clock() is Redis TIME in milliseconds.
-- pace(cfg, adm, now, length) reads what queue.LinePace needs:
--   {rate, batch, paused, interval_ms, adaptive, min_rate, max_rate,
--    opens_at (from cfg), eff_rate, pace_rate, pace_busy, moved, reach,
--    open_state (from adm), now, length, epoch (from cfg: the line's, set by
--    put_config.lua)}
-- (a field not set is nil in the reply).
-- damaged(cfg, field...) is a DAMAGED error reply when one of the config
-- hash's named fields is missing or not a number, else nil: scripts check
-- what they read before their first write (Redis does not roll a script
-- back), and a read-only one answers clearly rather than with zeros.
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function pace(cfg, adm, now, length)
  -- One HMGET for the config, epoch included: it is read on every poll.
  local c = redis.call('HMGET', cfg, 'rate', 'batch', 'paused', 'interval_ms', 'adaptive', 'min_rate',
    'max_rate', 'opens_at', 'epoch')
  local a = redis.call('HMGET', adm, 'eff_rate', 'pace_rate', 'pace_busy', 'moved', 'reach', 'open_state')
  local out = {}
  for i = 1, 8 do
    out[i] = c[i]
  end
  for i = 1, #a do
    out[#out + 1] = a[i]
  end
  out[#out + 1] = now
  out[#out + 1] = length
  out[#out + 1] = c[9]
  return out
end

local function damaged(cfg, ...)
  local names = {...}
  local values = redis.call('HMGET', cfg, unpack(names))
  for i = 1, #names do
    if not tonumber(values[i]) then
      return redis.error_reply('DAMAGED queue config ' .. cfg .. ': ' .. names[i] .. ' missing or not a number')
    end
  end
end

local function append(reply, fields)
  for i = 1, #fields do
    reply[#reply + 1] = fields[i]
  end
  return reply
end

