-- fold_rate: add one instance's protected-call samples to the window being
-- gathered for the adaptive rate; the first call of a new window claims the
-- decision on the one before it, with every instance's samples of that
-- window. Windows are numbered by Redis TIME, so N instances make one
-- decision per window and need no leader. A window with fewer calls than
-- the minimum is not decided: its samples join the new window.
--
-- KEYS[1] cfg     HASH queue config
-- KEYS[2] adm     HASH admission state (eff_*: the last decision; admitted)
-- KEYS[3] samples HASH win, adm0 (admitted when the window began), calls,
--                 overloaded, b<bucket> → count, c:<call id> of the calls
--                 folded in (a call run again, as the Redis client re-sends
--                 a command whose reply was late, is not counted twice)
-- KEYS[4] line    ZSET user → ticket
-- ARGV[1] window (ms), ARGV[2] the fewest calls a decision stands on
-- ARGV[3] calls, ARGV[4] overloaded, ARGV[5] the call's id,
-- ARGV[6..] bucket, count pairs
-- Reply: {0} the rate is not adaptive (samples dropped)
--        {1, window} folded into the current window
--        {2, window, rate, waiting, current, admitted, lastWindow, lastWhy,
--        lastP90, lastKnee, lastCallsPerUser, field, value, ...} folded into
--        `current`; this call claims the decision on `window` (the one
--        before), whose samples (every instance's) follow as the samples
--        hash's field, value pairs but the call ids; admitted counts the
--        users admitted since it began; the last* are the last decision
--        written (set_rate.lua)
local cfg = redis.call('HMGET', KEYS[1], 'adaptive', 'rate', 'min_rate', 'max_rate')
if cfg[1] ~= '1' then
  redis.call('DEL', KEYS[3])
  return {0}
end
-- Checked before the first write (Redis does not roll a script back).
if not (tonumber(cfg[2]) and tonumber(cfg[3]) and tonumber(cfg[4])) then
  return redis.error_reply('DAMAGED queue config ' .. KEYS[1] .. ': rate, min_rate or max_rate missing or not a number')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local win = math.floor(now / tonumber(ARGV[1]))
local current = tonumber(redis.call('HGET', KEYS[3], 'win'))
local seen = 'c:' .. ARGV[5]
if current == win and redis.call('HEXISTS', KEYS[3], seen) == 1 then
  return {1, win} -- this call, run again: folded already
end

local reply = {1, win}
local calls = tonumber(redis.call('HGET', KEYS[3], 'calls')) or 0
if current == win - 1 and calls < tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[3], 'win', win) -- too few to decide on: they join this window
elseif current ~= win then
  if current == win - 1 then
    local done = redis.call('HGETALL', KEYS[3])
    local adm = redis.call('HMGET', KEYS[2], 'eff_rate', 'eff_win', 'eff_why', 'eff_p90', 'eff_knee', 'eff_cpu',
      'admitted')
    local eff = tonumber(adm[1]) or tonumber(cfg[2])
    local since = tonumber(redis.call('HGET', KEYS[3], 'adm0')) or tonumber(adm[7]) or 0
    reply = {2, current, tostring(math.max(tonumber(cfg[3]), math.min(eff, tonumber(cfg[4])))),
      redis.call('ZCARD', KEYS[4]), win, (tonumber(adm[7]) or 0) - since, tonumber(adm[2]) or 0, adm[3] or '',
      tonumber(adm[4]) or 0, adm[5] or '0', adm[6] or '0'}
    for i = 1, #done, 2 do
      if string.sub(done[i], 1, 2) ~= 'c:' then -- the call ids stay here
        reply[#reply + 1] = done[i]
        reply[#reply + 1] = done[i + 1]
      end
    end
  end
  redis.call('DEL', KEYS[3])
  redis.call('HSET', KEYS[3], 'win', win, 'adm0', tonumber(redis.call('HGET', KEYS[2], 'admitted')) or 0)
end
redis.call('HINCRBY', KEYS[3], 'calls', ARGV[3])
redis.call('HINCRBY', KEYS[3], 'overloaded', ARGV[4])
for i = 6, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[3], 'b' .. ARGV[i], ARGV[i + 1])
end
redis.call('HSET', KEYS[3], seen, 1)
return reply
