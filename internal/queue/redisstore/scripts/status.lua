-- status: where a user stands, read in one step with the line's pace (the
-- estimate's inputs; pace.lua is put in front of this script). Changes
-- nothing.
--
-- KEYS[1] line   ZSET user → ticket
-- KEYS[2] cfg    HASH queue config
-- KEYS[3] tokens HASH user → entry token
-- KEYS[4] texp   ZSET user → token expiry (ms, Redis TIME)
-- KEYS[5] adm    HASH admission state
-- KEYS[6] pre    ZSET the opening's pre-queue, user → arrival (ms)
-- ARGV[1] user id
-- Reply: {-1} unknown queue; an error starting DAMAGED when the config
--        lacks a field this script needs
--        {0, pace...} not in queue
--        {1, position, length, ticket, pace...} waiting
--        {2, token, expiresAtMs, pace...} ready
--        {3, pace...} waiting for the opening, no place yet
if redis.call('EXISTS', KEYS[2]) == 0 then
  return {-1}
end
local bad = damaged(KEYS[2], 'rate', 'batch')
if bad then
  return bad
end
local user = ARGV[1]
local now = clock()
local length = redis.call('ZCARD', KEYS[1])

local reply = {0}
local ticket = redis.call('ZSCORE', KEYS[1], user)
if ticket then
  reply = {1, redis.call('ZRANK', KEYS[1], user) + 1, length, tonumber(ticket)}
elseif redis.call('ZSCORE', KEYS[6], user) then
  reply = {3}
else
  local token = redis.call('HGET', KEYS[3], user)
  local exp = token and tonumber(redis.call('ZSCORE', KEYS[4], user))
  if exp and exp > now then
    reply = {2, token, exp}
  end
end
return append(reply, pace(KEYS[2], KEYS[5], now, length))
