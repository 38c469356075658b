-- admit: one admission tick, if one is due by Redis TIME.
--
-- Every instance calls this about once per interval; the tick is due when
-- Redis's clock has reached adm.next, and claiming it moves adm.next one
-- interval on, so N instances together admit the configured global rate and
-- no leader is needed. A tick claimed late is made up: the next one stays
-- due one interval after the late one's due time. A backlog of more than one
-- tick is dropped (next re-anchors to now), so a stalled instance releases at
-- most two batches back to back, never a burst. A due time more than one
-- interval ahead of TIME (the clock went back) is pulled in to one interval.
-- The popped users get their tokens in the same script: nobody is ever
-- popped without a token.
--
-- KEYS[1] line   ZSET user → ticket
-- KEYS[2] cfg    HASH queue config
-- KEYS[3] adm    HASH next (ms), carry, counters, rate window
-- KEYS[4] tokens HASH user → entry token
-- KEYS[5] texp   ZSET user → token expiry (ms)
-- KEYS[6] left   ZSET tickets of users who left the line (see leave.lua)
-- ARGV[1..n] fresh tokens, one per user this tick may admit
-- Reply: {-1} unknown queue; an error starting DAMAGED (nothing written)
--        when the config lacks a field this script needs
--        {0, nextInMs} the tick is not due yet
--        {1, nextInMs, user1, ..., userN} claimed the tick and admitted these
--        (none when the queue is paused or nobody waits)
local cfg = redis.call('HMGET', KEYS[2], 'rate', 'interval_ms', 'batch', 'ttl_ms', 'paused', 'max_active')
if not cfg[1] then
  return {-1}
end
local rate, interval, batch, ttl = tonumber(cfg[1]), tonumber(cfg[2]), tonumber(cfg[3]), tonumber(cfg[4])
-- Everything read is checked before the first write: Redis does not roll a
-- script back, and a damaged config failing after ZPOPMIN would leave users
-- popped without tokens.
if not (rate and interval and batch and ttl) or interval < 1 or batch < 1 or ttl < 1
    or (cfg[6] and not tonumber(cfg[6])) then
  return redis.error_reply('DAMAGED queue config ' .. KEYS[2] .. ': rate, interval_ms, batch, ttl_ms or max_active missing or not a number')
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local adm = redis.call('HMGET', KEYS[3], 'next', 'carry', 'win_start', 'win_count', 'inline')
local due = tonumber(adm[1]) or now
-- A due time more than one interval ahead means Redis's clock went back (an
-- NTP step, a restored VM) since it was written: wait one interval from now,
-- not until then. Kept, or the limit would move on with the clock forever.
if due > now + interval then
  due = now + interval
  redis.call('HSET', KEYS[3], 'next', due)
end
if now < due then
  return {0, due - now}
end

-- Claim this tick.
local next = math.max(due + interval, now)

-- Forget expired tokens (bounded work per tick).
local expired = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now, 'LIMIT', 0, 1000)
if #expired > 0 then
  redis.call('HDEL', KEYS[4], unpack(expired))
  redis.call('ZREM', KEYS[5], unpack(expired))
  redis.call('HINCRBY', KEYS[3], 'expired', #expired)
end

local admitted = {}
local carry = 0
if cfg[5] ~= '1' then
  -- rate × interval users per tick; the fraction carries to the next tick.
  local quota = rate * interval / 1000 + (tonumber(adm[2]) or 0)
  local n = math.floor(quota)
  carry = quota - n
  if n > batch then n, carry = batch, 0 end
  -- Fewer fresh tokens than due (the caller's config was older): keep the
  -- rest for the next tick rather than lose it.
  if n > #ARGV then n, carry = #ARGV, carry + n - #ARGV end
  -- Users let straight in since the last tick (admit_now.lua) came out of
  -- this tick's quota.
  n = math.max(n - (tonumber(adm[5]) or 0), 0)
  -- The live-token cap: no more than the room under it; what the cap holds
  -- back is not carried (it would come out as a burst when room appears).
  local maxActive = tonumber(cfg[6]) or 0
  if maxActive > 0 then
    local room = maxActive - redis.call('ZCOUNT', KEYS[5], '(' .. now, '+inf')
    if room < n then n, carry = math.max(room, 0), 0 end
  end
  if n > 0 then
    local popped = redis.call('ZPOPMIN', KEYS[1], n)
    for i = 1, #popped, 2 do
      local user = popped[i]
      admitted[#admitted + 1] = user
      redis.call('HSET', KEYS[4], user, ARGV[#admitted])
      redis.call('ZADD', KEYS[5], now + ttl, user)
    end
    -- Nobody waiting for the rest: unused quota does not pile up.
    if #admitted < n then carry = 0 end
    -- Leavers below the new head no longer matter to anyone's position.
    local head = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
    if head[2] then
      redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', '(' .. head[2])
    else
      redis.call('DEL', KEYS[6])
    end
  end
end

-- The measured rate: admitted per second over windows of about 5 s.
local winStart = tonumber(adm[3]) or now
local winCount = (tonumber(adm[4]) or 0) + #admitted
if now - winStart >= 5000 then
  redis.call('HSET', KEYS[3], 'measured', string.format('%.3f', winCount * 1000 / (now - winStart)))
  winStart, winCount = now, 0
end
if #admitted > 0 then
  redis.call('HINCRBY', KEYS[3], 'admitted', #admitted)
end
redis.call('HSET', KEYS[3], 'next', next, 'carry', string.format('%.6f', carry),
  'win_start', winStart, 'win_count', winCount, 'inline', 0)

local reply = {1, next - now}
for i = 1, #admitted do
  reply[#reply + 1] = admitted[i]
end
return reply
