-- enter: put a user in line, or tell them where they already stand.
-- Already in line or in the pre-queue → the same; valid token → READY; line
-- full → refused; an opening ahead → the pre-queue; otherwise take the next
-- ticket (INCR, never a clock) and join. One script, so no request can slip
-- between the checks and the join. A user joining or entering again near
-- the front, when no-shows are skipped, is seen now (their instance's marks
-- could come after admission reaches them). pace.lua is put in front.
--
-- KEYS[1] line   ZSET user → ticket
-- KEYS[2] seq    STRING ticket counter
-- KEYS[3] cfg    HASH queue config
-- KEYS[4] tokens HASH user → entry token
-- KEYS[5] texp   ZSET user → token expiry (ms, Redis TIME)
-- KEYS[6] adm    HASH admission state and counters
-- KEYS[7] pre    ZSET the opening's pre-queue, user → arrival (ms)
-- KEYS[8] seen   ZSET user near the front → last seen (ms)
-- ARGV[1] user id
-- Reply: {-1} unknown queue; an error starting DAMAGED (nothing written)
--        when the config lacks a field this script needs
--        {-2, length} line full
--        {1, position, length, ticket, pace...} waiting
--        {2, token, expiresAtMs, pace...} ready
--        {3, pace...} waiting for the opening, no place yet
local cfg = redis.call('HMGET', KEYS[3], 'capacity', 'opens_at', 'abandon_ms')
if not cfg[1] then
  return {-1}
end
local bad = damaged(KEYS[3], 'rate', 'batch', 'capacity')
if bad then
  return bad
end
local adm = redis.call('HMGET', KEYS[6], 'open_state', 'reach')
local user = ARGV[1]
local now = clock()
local length = redis.call('ZCARD', KEYS[1])

local function mark(position)
  if (tonumber(cfg[3]) or 0) > 0 and (not adm[2] or position <= tonumber(adm[2])) then
    redis.call('ZADD', KEYS[8], now, user)
  end
end

local held = redis.call('ZSCORE', KEYS[1], user)
if held then
  local position = redis.call('ZRANK', KEYS[1], user) + 1
  mark(position)
  return append({1, position, length, tonumber(held)}, pace(KEYS[3], KEYS[6], now, length))
end
if redis.call('ZSCORE', KEYS[7], user) then
  return append({3}, pace(KEYS[3], KEYS[6], now, length))
end

local token = redis.call('HGET', KEYS[4], user)
if token then
  local exp = tonumber(redis.call('ZSCORE', KEYS[5], user))
  if exp and exp > now then
    return append({2, token, exp}, pace(KEYS[3], KEYS[6], now, length))
  end
  -- Expired: forget it, and line up again like anyone else.
  redis.call('HDEL', KEYS[4], user)
  redis.call('ZREM', KEYS[5], user)
  redis.call('HINCRBY', KEYS[6], 'expired', 1)
end

if length + redis.call('ZCARD', KEYS[7]) >= tonumber(cfg[1]) then
  return {-2, length}
end
-- An opening ahead (its pre-queue not yet closed): wait for it, unplaced.
if (tonumber(cfg[2]) or 0) > 0 and not adm[1] then
  redis.call('ZADD', KEYS[7], 'NX', now, user)
  return append({3}, pace(KEYS[3], KEYS[6], now, length))
end
if length == 0 then
  redis.call('HSET', KEYS[6], 'moved', now) -- someone starts waiting: the front has not stood still
end
local ticket = redis.call('INCR', KEYS[2])
redis.call('ZADD', KEYS[1], 'NX', ticket, user)
-- Tickets only grow, so the newcomer is last.
mark(length + 1)
return append({1, length + 1, length + 1, ticket}, pace(KEYS[3], KEYS[6], now, length + 1))
