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
-- The rate is the adaptive one (adm.eff_rate, within its bounds) while the
-- queue's rate is adaptive. With abandon_ms, a user at the front not seen
-- (seen.lua, enter.lua) for that long, though near the front for that long
-- (the checkpoints below), is a no-show: taken out of line without a token
-- and counted, and the tick fills its budget from those behind. While
-- an opening's pre-queue is being placed nobody is admitted: it goes first.
-- Each tick also keeps the line's pace (queue.PaceState), when its front
-- last moved, and how far from the front seen marks matter (reach).
--
-- KEYS[1] line   ZSET user → ticket
-- KEYS[2] cfg    HASH queue config
-- KEYS[3] adm    HASH next (ms), carry, counters, rate window, pace
-- KEYS[4] tokens HASH user → entry token
-- KEYS[5] texp   ZSET user → token expiry (ms)
-- KEYS[6] left   ZSET tickets of users who left the line (see leave.lua)
-- KEYS[7] seen   ZSET user near the front → last seen (ms)
-- ARGV[1..n] fresh tokens, one per user this tick may admit
-- Reply: {-1} unknown queue; an error starting DAMAGED (nothing written)
--        when the config lacks a field this script needs
--        {0, nextInMs} the tick is not due yet, or this call (its ARGV[1])
--        claimed a tick already
--        {1, nextInMs, skipped, user1, ..., userN} claimed the tick, passed
--        over `skipped` no-shows and admitted these (none when the queue is
--        paused or nobody waits)

-- fields reads a hash's fields by name.
local function fields(key, ...)
  local names = {...}
  local values = redis.call('HMGET', key, unpack(names))
  local out = {}
  for i, name in ipairs(names) do
    out[name] = values[i]
  end
  return out
end

local cfg = fields(KEYS[2], 'rate', 'interval_ms', 'batch', 'ttl_ms', 'paused', 'max_active',
  'adaptive', 'min_rate', 'max_rate', 'abandon_ms')
if not cfg.rate then
  return {-1}
end
local rate, interval, batch, ttl = tonumber(cfg.rate), tonumber(cfg.interval_ms), tonumber(cfg.batch), tonumber(cfg.ttl_ms)
local abandon = tonumber(cfg.abandon_ms) or 0
-- Everything read is checked before the first write: Redis does not roll a
-- script back, and a damaged config failing after ZPOPMIN would leave users
-- popped without tokens.
if not (rate and interval and batch and ttl) or interval < 1 or batch < 1 or ttl < 1
    or (cfg.max_active and not tonumber(cfg.max_active))
    or (cfg.abandon_ms and not tonumber(cfg.abandon_ms))
    or (cfg.adaptive == '1' and not (tonumber(cfg.min_rate) and tonumber(cfg.max_rate))) then
  return redis.error_reply('DAMAGED queue config ' .. KEYS[2] .. ': rate, interval_ms, batch, ttl_ms, max_active, abandon_ms, min_rate or max_rate missing or not a number')
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local adm = fields(KEYS[3], 'next', 'carry', 'win_start', 'win_count', 'inline', 'eff_rate',
  'pace_rate', 'pace_busy', 'pace_at', 'open_state', 'ck1_at', 'ck1_t', 'ck2_at', 'ck2_t', 'ck3_at', 'ck3_t',
  'last_call')
local due = tonumber(adm.next) or now
-- The same call again: the client library re-sent it after a read timed
-- out (go-redis retries a command whose reply was slow), though it had
-- run. Its tokens went to the users it admitted then; admitting the next
-- users with them would give two people one token (the second could never
-- buy). Its fresh tokens make ARGV[1] the call's name.
if ARGV[1] and adm.last_call == ARGV[1] then
  return {0, math.max(due - now, 0)}
end
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

if cfg.adaptive == '1' and tonumber(adm.eff_rate) then
  rate = math.max(tonumber(cfg.min_rate), math.min(tonumber(adm.eff_rate), tonumber(cfg.max_rate)))
end
local stopped = cfg.paused == '1' or adm.open_state == 'placing'
local length = redis.call('ZCARD', KEYS[1])
local paceRate = tonumber(adm.pace_rate) or 0

-- Seen marks matter within four times what leaves the front over
-- abandon_ms (instances mark the users within it who ask for their status).
-- No-shows are judged only among users who have been within it for
-- abandon_ms: the checkpoints (ckN_at, ckN_t) record, every half of it,
-- the ticket at the edge of the reach; a user whose ticket was within it
-- abandon_ms ago has had that long to be seen. So a block of no-shows
-- skipped at once does not carry those behind it, too far back to have
-- been marked, out with it.
local reach = math.ceil(4 * abandon / 1000 * math.max(rate, paceRate)) + 2 * batch
local judged = -1
local watermark = false
if abandon > 0 then
  for i = 1, 3 do
    local at = tonumber(adm['ck' .. i .. '_at'])
    if at and now - at >= abandon then
      judged = math.max(judged, tonumber(adm['ck' .. i .. '_t']))
    end
  end
  local last = tonumber(adm.ck3_at)
  if not last or now - last >= abandon / 2 then
    local at = redis.call('ZRANGE', KEYS[1], reach - 1, reach - 1, 'WITHSCORES')
    if not at[2] then
      at = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
    end
    watermark = tonumber(at[2]) or 0
  end
end

local admitted, examined, skipped = {}, {}, 0
local carry = 0
if not stopped then
  -- rate × interval users per tick; the fraction carries to the next tick.
  local quota = rate * interval / 1000 + (tonumber(adm.carry) or 0)
  local n = math.floor(quota)
  carry = quota - n
  if n > batch then n, carry = batch, 0 end
  -- Fewer fresh tokens than due (the caller's config was older): keep the
  -- rest for the next tick rather than lose it.
  if n > #ARGV then n, carry = #ARGV, carry + n - #ARGV end
  -- Users let straight in since the last tick (admit_now.lua) came out of
  -- this tick's quota.
  n = math.max(n - (tonumber(adm.inline) or 0), 0)
  -- The live-token cap: no more than the room under it; what the cap holds
  -- back is not carried (it would come out as a burst when room appears).
  local maxActive = tonumber(cfg.max_active) or 0
  if maxActive > 0 then
    local room = maxActive - redis.call('ZCOUNT', KEYS[5], '(' .. now, '+inf')
    if room < n then n, carry = math.max(room, 0), 0 end
  end
  -- The first n present users, read before anything is written; at most
  -- 1000 no-shows are passed over per tick. A user is a no-show when seen
  -- longer than abandon_ms ago, or never, and judged (see above).
  while #admitted < n and skipped < 1000 and #examined < length do
    local users = redis.call('ZRANGE', KEYS[1], #examined, #examined + math.min(n - #admitted, 1000) - 1, 'WITHSCORES')
    local names = {}
    for i = 1, #users, 2 do
      names[#names + 1] = users[i]
    end
    local seen = {}
    if abandon > 0 then
      seen = redis.call('ZMSCORE', KEYS[7], unpack(names))
    end
    for i = 1, #names do
      if skipped == 1000 then break end
      examined[#examined + 1] = names[i]
      local mark = tonumber(seen[i])
      if abandon == 0 or (mark and now - mark <= abandon) or tonumber(users[2 * i]) > judged then
        admitted[#admitted + 1] = names[i]
      else
        skipped = skipped + 1
      end
    end
  end
  if #examined > 0 then
    redis.call('ZREMRANGEBYRANK', KEYS[1], 0, #examined - 1)
    if abandon > 0 then
      for i = 1, #examined, 1000 do
        redis.call('ZREM', KEYS[7], unpack(examined, i, math.min(i + 999, #examined)))
      end
    end
    for i = 1, #admitted do
      redis.call('HSET', KEYS[4], admitted[i], ARGV[i])
      redis.call('ZADD', KEYS[5], now + ttl, admitted[i])
    end
  end
  if n > 0 then
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
local winStart = tonumber(adm.win_start) or now
local winCount = (tonumber(adm.win_count) or 0) + #admitted
if now - winStart >= 5000 then
  redis.call('HSET', KEYS[3], 'measured', string.format('%.3f', winCount * 1000 / (now - winStart)))
  winStart, winCount = now, 0
end
if #admitted > 0 then
  redis.call('HINCRBY', KEYS[3], 'admitted', #admitted)
end
if skipped > 0 then
  redis.call('HINCRBY', KEYS[3], 'abandoned', skipped)
end

-- The line's pace (queue.AdvancePace): an exponentially weighted rate, over
-- the last minute, of users leaving the front, on a clock that runs only
-- while people wait and admission runs.
local paceBusy, paceAt = tonumber(adm.pace_busy) or 0, tonumber(adm.pace_at)
local moved = #examined
if stopped or length == 0 then
  paceAt = nil
else
  local dt = interval / 1000
  if paceAt then dt = (now - paceAt) / 1000 end
  paceRate = paceRate * math.exp(-dt / 60) + moved / 60
  paceBusy = math.min(paceBusy + dt, 3600)
  paceAt = nil
  if length > moved then paceAt = now end
end
redis.call('HSET', KEYS[3], 'pace_rate', string.format('%.6f', paceRate), 'pace_busy', string.format('%.3f', paceBusy))
if paceAt then
  redis.call('HSET', KEYS[3], 'pace_at', paceAt)
else
  redis.call('HDEL', KEYS[3], 'pace_at')
end
if stopped or length == 0 or moved > 0 then
  redis.call('HSET', KEYS[3], 'moved', now)
end
if abandon > 0 then
  redis.call('HSET', KEYS[3], 'reach', reach)
  if watermark then
    redis.call('HSET', KEYS[3], 'ck1_at', adm.ck2_at or '', 'ck1_t', adm.ck2_t or '',
      'ck2_at', adm.ck3_at or '', 'ck2_t', adm.ck3_t or '', 'ck3_at', now, 'ck3_t', watermark)
  end
else
  redis.call('HDEL', KEYS[3], 'reach', 'ck1_at', 'ck1_t', 'ck2_at', 'ck2_t', 'ck3_at', 'ck3_t')
end

redis.call('HSET', KEYS[3], 'next', next, 'carry', string.format('%.6f', carry),
  'win_start', winStart, 'win_count', winCount, 'inline', 0, 'last_call', ARGV[1] or '')

local reply = {1, next - now, skipped}
for i = 1, #admitted do
  reply[#reply + 1] = admitted[i]
end
return reply
