-- fold_rate: add one instance's protected-call samples to the window being
-- gathered for the adaptive rate; the first call of a new window claims the
-- decision on the one before it, with every instance's samples of that
-- window. Windows are numbered by Redis TIME, so N instances make one
-- decision per window and need no leader. A window with fewer calls than
-- the minimum is not decided: its samples join the new window. A window
-- no call came in after for a few windows (every instance's flush late,
-- on a loaded machine) is still decided, by the first call after it, up
-- to the most windows late given; older samples are dropped.
--
-- KEYS the queue's (the generated text's second line names them); samples
--      holds win, w0 (the first window its samples were gathered in),
--      adm0 (admitted when the window began), calls, overloaded, lat,
--      waited and held (µs), b<bucket> → count, p:<instance> → the
--      connections that instance's pool had and q:<instance> → the calls
--      waiting for one there (its latest counts), and c:<call id> of the
--      calls folded in (a call run again, as the Redis client re-sends a
--      command whose reply was late, is not counted twice)
-- ARGV[1] window (ms), ARGV[2] the fewest calls a decision stands on
-- ARGV[3] calls, ARGV[4] overloaded, ARGV[5] the call's id,
-- ARGV[6] latency, ARGV[7] waited for a pool's connection, ARGV[8] held
-- one (µs), ARGV[9] the instance, ARGV[10] its pool's connections ('0': no
-- pool), ARGV[11] the calls waiting for one there, ARGV[12] the most
-- windows late a window is still decided, ARGV[13..] bucket, count pairs
-- Reply: {NOT_ADAPTIVE} (samples dropped)
--        {FOLDED, window} folded into the current window
--        {CLAIMED, window, rate, waiting, current, admitted, lastWindow,
--        lastWhy, lastMemory, field, value, ...} folded into `current`;
--        this call claims the decision on `window` (an earlier one), whose
--        samples (every instance's) follow as the samples hash's field,
--        value pairs but the call ids; admitted counts the users admitted
--        since it began; the last* are the last decision written
--        (set_rate.lua), lastMemory as Go wrote it (JSON)
local windowMs = tonumber(ARGV[1])
local minCalls = tonumber(ARGV[2])
local calls, overloaded = ARGV[3], ARGV[4]
local seen = 'c:' .. ARGV[5]
local latency, waited, held, instance, pool = ARGV[6], ARGV[7], ARGV[8], ARGV[9], ARGV[10]
local queued, maxLate = ARGV[11], tonumber(ARGV[12])
local buckets = {unpack(ARGV, 13)}
local cfg, adm, refused = config({'rate', 'min_rate', 'max_rate'})
if cfg.adaptive ~= '1' then
  redis.call('DEL', K.samples)
  return {NOT_ADAPTIVE}
end
if refused then -- checked before the first write, as config read it
  return refused
end
local win = math.floor(clock() / windowMs)
local current = tonumber(redis.call('HGET', K.samples, 'win'))
if current == win and redis.call('HEXISTS', K.samples, seen) == 1 then
  return {FOLDED, win} -- this call, run again: folded already
end

local reply = {FOLDED, win}
local admitted = tonumber(adm.admitted) or 0
local folded = tonumber(redis.call('HGET', K.samples, 'calls')) or 0
local late = current and current < win and win - current <= maxLate
if late and folded < minCalls then
  redis.call('HSET', K.samples, 'win', win) -- too few to decide on: they join this window
elseif current ~= win then
  if late then
    local done = redis.call('HGETALL', K.samples)
    local since = tonumber(redis.call('HGET', K.samples, 'adm0')) or admitted
    reply = {CLAIMED, current, tostring(rateInForce(cfg, adm.eff_rate)), redis.call('ZCARD', K.line), win,
      admitted - since, tonumber(adm.eff_win) or 0, adm.eff_why or '', adm.eff_mem or ''}
    for i = 1, #done, 2 do
      if string.sub(done[i], 1, 2) ~= 'c:' then -- the call ids stay here
        append(reply, {done[i], done[i + 1]})
      end
    end
  end
  redis.call('DEL', K.samples)
  redis.call('HSET', K.samples, 'win', win, 'w0', win, 'adm0', admitted)
end
redis.call('HINCRBY', K.samples, 'calls', calls)
redis.call('HINCRBY', K.samples, 'overloaded', overloaded)
redis.call('HINCRBY', K.samples, 'lat', latency)
redis.call('HINCRBY', K.samples, 'waited', waited)
redis.call('HINCRBY', K.samples, 'held', held)
if pool ~= '0' then
  redis.call('HSET', K.samples, 'p:' .. instance, pool, 'q:' .. instance, queued)
end
for i = 1, #buckets, 2 do
  redis.call('HINCRBY', K.samples, 'b' .. buckets[i], buckets[i + 1])
end
redis.call('HSET', K.samples, seen, 1)
return reply
