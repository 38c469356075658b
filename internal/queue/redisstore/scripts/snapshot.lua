-- snapshot: the line's head, last ticket, length, its pace and the leavers
-- above the head, in one step, so an instance can answer status polls by
-- arithmetic for a moment (queue.Snapshot; pace.lua is put in front).
-- Changes nothing.
--
-- KEYS[1] line   ZSET user → ticket
-- KEYS[2] seq    STRING ticket counter
-- KEYS[3] cfg    HASH queue config
-- KEYS[4] left   ZSET tickets of users who left the line (see leave.lua)
-- KEYS[5] adm    HASH admission state
-- ARGV[1] at most this many leavers; one more is read to tell "more"
-- Reply: {-1} unknown queue; an error starting DAMAGED when the config
--        lacks a field this script needs
--        {1, head, last, length, pace (17 fields)..., leaver1, ...}
--        head is 0 when no one waits.
if redis.call('EXISTS', KEYS[3]) == 0 then
  return {-1}
end
local bad = damaged(KEYS[3], 'rate', 'batch')
if bad then
  return bad
end
local length = redis.call('ZCARD', KEYS[1])
local reply = append({1, 0, tonumber(redis.call('GET', KEYS[2]) or '0'), length},
  pace(KEYS[3], KEYS[5], clock(), length))
local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
if head[2] then
  reply[2] = tonumber(head[2])
  local left = redis.call('ZRANGEBYSCORE', KEYS[4], head[2], '+inf', 'LIMIT', 0, tonumber(ARGV[1]) + 1)
  for i = 1, #left do
    reply[#reply + 1] = tonumber(left[i])
  end
end
return reply
