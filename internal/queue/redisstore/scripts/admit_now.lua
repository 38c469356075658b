-- admit_now: let a user straight in while the line is quiet (gateway mode:
-- nobody should see a waiting page on an ordinary day).
--
-- A user already in line (or in an opening's pre-queue) keeps their place;
-- one holding a valid token gets it back. Anyone else is admitted at once,
-- with the token given, only if nobody waits, the queue is not paused, no
-- opening is ahead or being placed, the next admission tick still has
-- budget (the rate in force × interval plus the carried fraction, at most the batch,
-- less what was admitted this way since the last tick: admit.lua takes
-- these from that tick's quota, so the global rate holds) and the live-token
-- cap has room. Such a user counts as having entered and been admitted, so
-- the totals in stats.lua still balance; their ticket is below any later
-- one, so snapshots are unaffected.
--
-- KEYS[1] line   ZSET user → ticket
-- KEYS[2] seq    STRING ticket counter
-- KEYS[3] cfg    HASH queue config
-- KEYS[4] adm    HASH admission state and counters
-- KEYS[5] tokens HASH user → entry token
-- KEYS[6] texp   ZSET user → token expiry (ms, Redis TIME)
-- KEYS[7] pre    ZSET the opening's pre-queue
-- ARGV[1] user id
-- ARGV[2] a fresh token, written if the user is admitted
-- Reply (pace: pace.lua's block, put in front of this script):
--        {-1} unknown queue; an error starting DAMAGED (nothing written)
--        when the config lacks a field this script needs
--        {0, pace...} not admitted (the line is busy)
--        {1, position, length, ticket, pace...} waiting
--        {2, token, expiresAtMs, pace...} ready
--        {3, pace...} waiting for the opening
local cfg = redis.call('HMGET', KEYS[3], 'rate', 'batch', 'interval_ms', 'ttl_ms', 'paused', 'max_active',
  'adaptive', 'min_rate', 'max_rate', 'opens_at')
if not cfg[1] then
  return {-1}
end
local rate, batch, interval, ttl = tonumber(cfg[1]), tonumber(cfg[2]), tonumber(cfg[3]), tonumber(cfg[4])
-- Checked before the first write (Redis does not roll a script back).
if not (rate and batch and interval and ttl) or (cfg[6] and not tonumber(cfg[6]))
    or (cfg[7] == '1' and not (tonumber(cfg[8]) and tonumber(cfg[9]))) then
  return redis.error_reply('DAMAGED queue config ' .. KEYS[3] .. ': rate, batch, interval_ms, ttl_ms, max_active, min_rate or max_rate missing or not a number')
end
local user = ARGV[1]
local now = clock()
local length = redis.call('ZCARD', KEYS[1])

local ticket = redis.call('ZSCORE', KEYS[1], user)
if ticket then
  local rank = redis.call('ZRANK', KEYS[1], user)
  return append({1, rank + 1, length, tonumber(ticket)}, pace(KEYS[3], KEYS[4], now, length))
end
if redis.call('ZSCORE', KEYS[7], user) then
  return append({3}, pace(KEYS[3], KEYS[4], now, length))
end
local held = redis.call('HGET', KEYS[5], user)
if held then
  local exp = tonumber(redis.call('ZSCORE', KEYS[6], user))
  if exp and exp > now then
    return append({2, held, exp}, pace(KEYS[3], KEYS[4], now, length))
  end
end

local busy = append({0}, pace(KEYS[3], KEYS[4], now, length))
local adm = redis.call('HMGET', KEYS[4], 'carry', 'inline', 'eff_rate', 'open_state')
if cfg[5] == '1' or length > 0 or adm[4] == 'placing' or ((tonumber(cfg[10]) or 0) > 0 and not adm[4]) then
  return busy
end
if cfg[7] == '1' and tonumber(adm[3]) then
  rate = math.max(tonumber(cfg[8]), math.min(tonumber(adm[3]), tonumber(cfg[9])))
end
local quota = math.min(math.floor(rate * interval / 1000 + (tonumber(adm[1]) or 0)), batch)
if (tonumber(adm[2]) or 0) >= quota then
  return busy
end
local maxActive = tonumber(cfg[6]) or 0
if maxActive > 0 and redis.call('ZCOUNT', KEYS[6], '(' .. now, '+inf') >= maxActive then
  return busy
end

if held then -- expired: forget it, as enter.lua does
  redis.call('HINCRBY', KEYS[4], 'expired', 1)
end
redis.call('INCR', KEYS[2])
redis.call('HSET', KEYS[5], user, ARGV[2])
redis.call('ZADD', KEYS[6], now + ttl, user)
redis.call('HINCRBY', KEYS[4], 'inline', 1)
redis.call('HINCRBY', KEYS[4], 'inline_total', 1)
redis.call('HINCRBY', KEYS[4], 'admitted', 1)
redis.call('HINCRBY', KEYS[4], 'win_count', 1)
return append({2, ARGV[2], now + ttl}, pace(KEYS[3], KEYS[4], now, length))
