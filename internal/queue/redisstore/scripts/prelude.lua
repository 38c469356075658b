-- prelude: what the scripts share. The generator (go generate; README.md)
-- puts it once at the top of the library of functions the scripts become,
-- loaded once per server: a script's 100 lines do not count it (it has
-- 200 of its own). A declaration starts at a `local` at the start of a
-- line, with the comment just above it, and ends where the next one's
-- comment starts.

-- Reply kinds, a reply's first value: where a user stands (standing, and
-- enter.lua's LINE_FULL and SOLD_OUT; SHADOW: a place in the shadow line),
-- and an unknown queue (config). Go names each alike (reply.go:
-- UNKNOWN_QUEUE is kindUnknownQueue; TestReplyKindsAgree).
local UNKNOWN_QUEUE, LINE_FULL, SOLD_OUT, NOT_IN_LINE, WAITING, READY, PRE_QUEUE, SHADOW = -1, -2, -3, 0, 1, 2, 3, 4

-- Reply kinds of lanes (issue 53): LANE, a place in a lane other than the
-- public (laneStanding), LANE_PRE_QUEUE, in the opening's pre-queue for
-- one ({LANE_PRE_QUEUE, lane}); join.lua's code the queue does not hold
-- (or expired), and code with no redemption left. And of handoffs (issue
-- 55, on the same line: the prelude's lines are capped): MOVED, a user
-- whose place moved to another session (status.lua), a handoff code gone
-- (used, lapsed, or its place gone), a claimer holding a place already
-- (claim_handoff.lua), a code kept (put_handoff.lua).
local LANE, LANE_PRE_QUEUE, INVALID_CODE, CODE_USED, MOVED, HANDOFF_GONE, IN_LINE_ALREADY, HANDOFF_KEPT = 5, 6, -4, -5, 7, -6, -7, 8

-- Reply kinds of open_due.lua: no opening pending, one not yet due, one
-- due (the caller holds the lease), one another instance is placing.
local NO_OPENING, NOT_DUE, DUE, PLACED_ELSEWHERE = 0, 1, 2, 3

-- Reply kinds of fold_rate.lua: the rate is not adaptive, the samples
-- were folded, and folded with the claim of the last window's decision.
local NOT_ADAPTIVE, FOLDED, CLAIMED = 0, 1, 2

-- Reply kinds of leave.lua: what the user left, if anything.
local NOTHING_LEFT, LEFT_LINE, GAVE_BACK, LEFT_PRE_QUEUE = 0, 1, 2, 3

-- Reply kinds of begin_use.lua: the lock taken, the token not valid
-- (missing, wrong or expired), or in use by another request.
local LOCKED, TOKEN_INVALID, IN_USE = 1, 0, -1

-- Reply kinds of place.lua: the caller does not hold the opening's lease,
-- more are to be placed, or the last were and the line is open.
local NOT_OWNER, MORE_TO_PLACE, OPENED = -1, 0, 1

-- Reply kinds of admit.lua: the tick read has gone (nobody admitted), or
-- the plan was applied.
local TICK_GONE, APPLIED = 0, 1

-- The reply kind of set_stock.lua: the stock as it stands now.
local STOCK = 1

-- Reply kinds of commit_draw.lua and save_draw.lua: no opening (or no
-- pending commitment) to keep it for, a commitment kept, a record kept.
local NO_COMMITMENT, COMMITTED, DRAWN = 0, 1, 2

-- storedCommitment is t, a commitment decoded from its stored JSON
-- (draw.Committed.MarshalStored), encoded again with epoch, the queue's
-- life as the digits kept: cjson writes a number with 14 significant
-- digits, and an epoch (TIME's seconds and microseconds) has 16.
local function storedCommitment(t, epoch)
  t.epoch = 0
  return (string.gsub(cjson.encode(t), '"epoch":0([,}])', '"epoch":' .. epoch .. '%1'))
end

-- epochOf is the epoch's digits in a stored commitment's JSON.
local function epochOf(json)
  return string.match(json, '"epoch":(%-?%d+)')
end

-- clock is Redis TIME in ms (and TIME): all instances' one clock, read here only.
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), t
end

-- append adds list's items to reply.
local function append(reply, list)
  for i = 1, #list do reply[#reply + 1] = list[i] end
  return reply
end

-- rateInForce is queue.Config.RateInForce: eff, the adaptive rate stored,
-- within its bounds while the rate is adaptive, else the configured rate.
-- (A phase's own rate, adm.phase_rate, goes before it where one counts.)
local function rateInForce(cfg, eff)
  local adaptive = cfg.adaptive == '1' and tonumber(eff) and tonumber(cfg.min_rate) and tonumber(cfg.max_rate)
  return adaptive and math.max(tonumber(cfg.min_rate), math.min(tonumber(eff), tonumber(cfg.max_rate))) or tonumber(cfg.rate)
end

-- BAND is a lane's band of scores in K.lanes (keys.go): a place there is
-- laneId × BAND + its ticket.
local BAND = 2 ^ 40

-- scoreText is a score as Redis must be given it: a Lua number argument
-- is sent with 14 digits, and a lane's score has up to 16.
local function scoreText(x)
  return string.format('%.0f', x)
end

-- laneId is the lane's id (K.laneids), a new one (never one used before)
-- when create and the lane has none yet; else nil.
local function laneId(name, create)
  local id = tonumber(redis.call('HGET', K.laneids, name))
  if id or not create then return id end
  id = redis.call('HINCRBY', K.laneids, '#', 1)
  redis.call('HSET', K.laneids, name, id, '#' .. id, name)
  return id
end

-- laneShare is the share of the rate the lane got at the last tick
-- (adm.lane_shares, "name=share ...": admission.TickState.LaneShares), or
-- nil: none known (a queue without lanes: the whole rate).
local function laneShare(adm, name)
  local s = adm.lane_shares
  return s and tonumber(string.match(' ' .. s, ' ' .. (string.gsub(name, '%-', '%%-')) .. '=(%S+)')) or nil
end

-- pace appends to reply the block an answer about the line carries, read in
-- the same step (queue.LinePace), in the order Go reads it (reply.go's
-- paceSettings and paceFields after the epoch; TestPaceBlockAgrees), then
-- now and the line's length. The settings are those in force: the phase's
-- rate (fixed: not adaptive) and method over the queue's own (the tick
-- keeps the phase in force in the phase_ fields: tick.go's phaseFields).
local function pace(reply, cfg, adm, now, length)
  return append(reply, {cfg.epoch, adm.phase_rate or cfg.rate, cfg.batch, cfg.interval_ms, cfg.paused,
    adm.phase_rate and '0' or cfg.adaptive, cfg.min_rate, cfg.max_rate, cfg.opens_at, adm.phase_method or cfg.method,
    cfg.abandon_ms, adm.eff_rate, adm.pace_rate, adm.pace_busy, adm.moved, adm.reach, adm.open_state, adm.units_left, adm.cap_room,
    adm.lane_shares, adm.pace_claimed, adm.pace_departed, adm.rate_mean, adm.rate_var, adm.changes, now, length})
end

-- everyone is how many wait, every lane together, the line's (K.line)
-- being length: PaceState.Length, for "stalled" is the whole line's
-- (memstore's waitingAll). Other lanes only where standing looks in them.
local function everyone(adm, length)
  return length + (adm.lane_shares and redis.call('ZCARD', K.lanes) or 0)
end

-- inForce says whether the lane called name is in force: the public
-- always; another if the lanes in force (the phase's, else the queue's
-- own) name it.
local function inForce(cfg, adm, name)
  return name == 'public' or string.find(adm.phase_lanes or cfg.lanes or '', '"name":"' .. name .. '"', 1, true) ~= nil
end

-- opening is whether an opening's pre-queue may hold users: one is ahead
-- (opens_at set, not yet opened) or being placed. Only then is it looked at
-- on the hot path: open_due.lua and place.lua empty it before they mark the
-- queue open, and put_config.lua opens at once a queue whose opening is
-- cleared with users in it.
local function opening(cfg, adm)
  return adm.open_state == 'placing' or ((tonumber(cfg.opens_at) or 0) > 0 and not adm.open_state)
end

-- secs is ms as Go's Duration.Seconds figures it (whole seconds plus the
-- rest), so both round alike; ms > 0.
local function secs(ms) return math.floor(ms / 1000) + ms % 1000 * 1e6 / 1e9 end

-- passing is estimate.Params.passing: the seconds the front takes to move n
-- places, rate ÷ claim a second until the first of steps ({after, rate}),
-- then each step's; math.huge when it never does.
local function passing(n, claim, rate, steps)
  local at = 0
  for _, s in ipairs(steps) do
    if s[1] > at and rate > 0 then
      local moves = (s[1] - at) * rate / claim
      if n <= moves then return at + n * claim / rate end
      n = n - moves
    end
    at, rate = math.max(at, s[1]), s[2]
  end
  return rate > 0 and at + n * claim / rate or math.huge
end

-- shown is the wait a newcomer at position (their lane as long as it) is
-- told, "seconds low high", kept with their place (K.joined) for the
-- estimate's accuracy: queue.Pace.Estimate on the pace block read with it,
-- line for line the same float arithmetic (LinePace and Pace.fit, then
-- estimate.Of), so the two agree to the bit; low and high -1 when the
-- line cannot say (paused, stalled, opening, sold out, beyond the stock).
-- The rate is the phase's or the one in force (Pace.Rate), the measured
-- pace's share admitted where it holds admission below it (Held), the
-- lane's share of it (share: Pace.LaneShare; nil without lanes). The
-- prior spread is an adaptive rate's unless a phase fixed the rate (the
-- pace block then says adaptive '0'), and wider where no-shows are judged.
local function shown(cfg, adm, now, position, share)
  local r, busy, ms, units = tonumber(adm.phase_rate) or rateInForce(cfg, adm.eff_rate), tonumber(adm.pace_busy) or 0, tonumber(cfg.interval_ms), tonumber(adm.units_left)
  local m = busy * 1e9 >= 1e10 and (tonumber(adm.pace_rate) or 0) / (1 - math.exp(-busy / 60)) or 0
  local adaptive, claim, sh = cfg.adaptive == '1' and not adm.phase_rate, 1, share and share > 0 and share or 1
  local spread, a = math.sqrt(0.01 + (adaptive and 0.09 or 0) + ((tonumber(cfg.abandon_ms) or 0) > 0 and 0.09 or 0)), r
  if m > 0 then -- Pace.fit
    local pd, pc, mean, abandon = tonumber(adm.pace_departed) or 0, tonumber(adm.pace_claimed) or 0, tonumber(adm.rate_mean) or 0, tonumber(cfg.abandon_ms) or 0
    if pc > 0 and pd > 0 then claim = math.min(math.max(pc / pd, 0.05), 1) end
    if mean > 0 then spread = math.max(0.05, math.sqrt(tonumber(adm.rate_var) or 0) / mean) end
    -- The prior's part for no-shows until a crowd's can have been judged (noShowsSettle, at most an hour).
    if abandon > 0 and mean > 0 and busy < math.min(secs(2 * abandon + 15000), 3600) then spread = math.sqrt(spread * spread + 0.09) end
    local ad = pc / (1 - math.exp(-busy / 15)) -- the admitted pace (Held): PaceClaimed bias-corrected
    if ad > 0 and math.abs(r - mean) < r / 10 and ad < r * 0.9 then a = ad end
  end
  a = a * sh
  local steps, drawn = {}, (adm.phase_method or cfg.method) == 'random'
  for at, rate in string.gmatch(adm.changes or '', '(%d+):(%S+)') do
    if tonumber(at) > now then steps[#steps + 1] = {secs(tonumber(at) - now), tonumber(rate) * sh} end
  end
  local moved, iv = tonumber(adm.moved) or 0, secs(ms)
  local stalled = moved > 0 and (now - moved) * 1e6 > math.max(2e9, 10 * ms * 1e6, r > 0 and math.floor(3 / r * 1e9) or 0)
  local none = cfg.paused == '1' or opening(cfg, adm) or stalled or units and (units <= 0 or not drawn and position > units)
  if a <= 0 and #steps == 0 then return '0 -1 -1' end -- estimate.Of's paused
  if position <= math.min(math.floor(a / claim * iv), tonumber(cfg.batch), tonumber(adm.cap_room) or math.huge) then
    return none and '0 -1 -1' or '0 0 ' .. math.ceil(iv)
  end
  local mid, lo, hi = position, position, position
  if drawn then mid, lo, hi = (position + 1) / 2, 0.05 * position, 0.95 * position end
  local f, t, th = 1 + 1.645 * math.sqrt(spread * spread + (1 - claim) / (claim * mid)), passing(mid, claim, a, steps), passing(hi, claim, a, steps)
  if t == math.huge or th == math.huge then return '0 -1 -1' end -- estimate.Of's: a range with no end is not known
  if none then return math.ceil(t) .. ' -1 -1' end
  local low = math.floor(passing(lo, claim, a, steps) / f - iv)
  return math.ceil(t) .. ' ' .. math.min(math.max(0, low), math.ceil(t)) .. ' ' .. math.max(math.ceil(th * f + iv), math.ceil(t))
end

-- unplaced is, while an opening is being placed, how many of its pre-queue
-- are still to be placed (in lane: a lane's but the public's, whose
-- people K.prelanes names; else the public's) and the last ticket
-- reserved for them (open_end): they are ahead of everyone in their lane
-- who entered after the close, whose positions and the lane's length
-- count them; 0 otherwise.
local function unplaced(adm, lane)
  if adm.open_state ~= 'placing' then return 0, nil end
  if not lane then
    return redis.call('ZCARD', K.pre) - (adm.lane_shares and redis.call('HLEN', K.prelanes) or 0), tonumber(adm.open_end)
  end
  local n = 0
  for _, l in ipairs(redis.call('HVALS', K.prelanes)) do
    if l == lane then n = n + 1 end
  end
  return n, tonumber(adm.open_end)
end

-- shadowTurn is admission's shadowTurn on the queue as it stands now: it
-- lets the shadow line in (shadow_admits last), nobody waits in the line,
-- and no opening is ahead or being placed (opening's rule, on the fields
-- read here: admit.lua reads no config). admit.lua asks it before it
-- applies a plan of the shadow line's: a person entering, a place
-- cleared, an opening set or the setting changed since the tick's read
-- take the turn back.
local function shadowTurn()
  local c = redis.call('HMGET', K.cfg, 'shadow_admits', 'opens_at', 'open_state')
  local ahead = c[3] == 'placing' or ((tonumber(c[2]) or 0) > 0 and not c[3])
  return c[1] == 'last' and not ahead and redis.call('ZCARD', K.line) + redis.call('ZCARD', K.lanes) == 0
end

-- markSeen: when no-shows are skipped (cfg.abandon_ms), a waiting user at
-- position, within the reach of seen marks (every position before the first
-- tick sets one), is seen now. Their instance's batched mark (seen.lua) comes
-- up to a second later, and admission could reach them meanwhile: a user back
-- from a long absence would be skipped though asking. A hidden mark (< 0)
-- stays hidden: only the page's word, in the batched mark, changes that.
local function markSeen(cfg, adm, user, position, now)
  local reach = tonumber(adm.reach)
  if (tonumber(cfg.abandon_ms) or 0) > 0 and (not reach or position <= reach) then redis.call('ZADD', K.seen, (tonumber(redis.call('ZSCORE', K.seen, user)) or 0) < 0 and -now or now, user) end
end

-- behindOf is the real line's last ticket when the shadow place of user
-- was taken (its mark's first part, K.suspects).
local function behindOf(user)
  return tonumber(string.match(redis.call('HGET', K.suspects, user) or '', '^(%d+)|')) or 0
end

-- shadowStanding answers a shadow place (memstore's state.shadowStanding)
-- as a person's: {SHADOW, position, length, ticket, behind, preQueue},
-- shown one behind everyone waiting up to its behind ticket (ZCOUNT to
-- behind + 0.5: cleared places standing there count too, and the unplaced
-- of an opening it came behind); in the pre-queue (1, no position) while
-- an opening is ahead.
local function shadowStanding(cfg, adm, user, ticket, length)
  local behind = behindOf(user)
  if (tonumber(cfg.opens_at) or 0) > 0 and not adm.open_state then return {SHADOW, 0, 0, ticket, behind, 1} end
  local n, last = unplaced(adm)
  local position = 1 + redis.call('ZCOUNT', K.line, '-inf', behind + 0.5) + (last and behind >= last and n or 0)
  return {SHADOW, position, math.max(length + n + 1, position), ticket, behind, 0}
end

-- laneStanding answers a place in a lane other than the public, whose
-- score in K.lanes is score: {LANE, position, length, ticket, lane}, its
-- rank and length within its lane's band, behind the unplaced of an
-- opening as standing's.
local function laneStanding(adm, score)
  local lo = math.floor(score / BAND) * BAND
  local lane = redis.call('HGET', K.laneids, '#' .. (lo / BAND))
  local n, last = unplaced(adm, lane)
  local ticket = score - lo
  local ahead = last and ticket > last and n or 0
  local rank = redis.call('ZCOUNT', K.lanes, scoreText(lo), scoreText(score))
  local length = redis.call('ZCOUNT', K.lanes, scoreText(lo), '(' .. scoreText(lo + BAND))
  return {LANE, rank + ahead, length + n, ticket, lane}
end

-- standing is where the user stands: {WAITING, position, length, ticket}
-- in line (behind the unplaced of an opening when they entered after its
-- close; ticket 0 for a place cleared from the shadow line, whose score is
-- a half above a ticket), laneStanding's in another lane,
-- shadowStanding's in the shadow line, {PRE_QUEUE} in the opening's
-- pre-queue ({LANE_PRE_QUEUE, lane} there for another lane than the
-- public), {READY, token, expiresAtMs}
-- with a valid token; else nil, and the token they hold whose time is up,
-- if any. Other lanes (K.lanes, K.prelanes) are looked in only in a queue
-- that has had lanes: adm.lane_shares is set, and never deleted, once
-- anyone could stand in one (join.lua, place.lua, tick.go's applyArgs).
local function standing(cfg, adm, user, now, length)
  local ticket = redis.call('ZSCORE', K.line, user)
  if ticket then
    local n, last = unplaced(adm)
    local ahead = last and tonumber(ticket) > last and n or 0 -- the unplaced, for one who entered after the close
    return {WAITING, redis.call('ZRANK', K.line, user) + 1 + ahead, length + n, tonumber(ticket) % 1 == 0 and tonumber(ticket) or 0}
  end
  local score = adm.lane_shares and redis.call('ZSCORE', K.lanes, user)
  if score then return laneStanding(adm, tonumber(score)) end
  local shadowTicket = redis.call('ZSCORE', K.shadow, user)
  if shadowTicket then return shadowStanding(cfg, adm, user, tonumber(shadowTicket), length) end
  if opening(cfg, adm) and redis.call('ZSCORE', K.pre, user) then
    local lane = adm.lane_shares and redis.call('HGET', K.prelanes, user)
    return lane and {LANE_PRE_QUEUE, lane} or {PRE_QUEUE}
  end
  local token = redis.call('HGET', K.tokens, user)
  local exp = token and tonumber(redis.call('ZSCORE', K.texp, user))
  if exp and exp > now then return {READY, token, exp} end
  return nil, token
end

-- liveToken: when the token presented is the one the user holds and its
-- time is not up, its expiry (ms), now, and the token's digest; else nil.
-- Digests, not the secrets, are compared: the time a string compare takes
-- then says nothing useful about the stored token.
local function liveToken(user, presented)
  local stored = redis.call('HGET', K.tokens, user)
  local digest = stored and redis.sha1hex(stored)
  if not digest or digest ~= redis.sha1hex(presented) then return nil end
  local now = clock()
  local exp = tonumber(redis.call('ZSCORE', K.texp, user))
  if not exp or exp <= now then return nil end
  return exp, now, digest
end

-- dropToken deletes the user's token and counts it on counter, or as expired
-- if its time was up, as stats.lua counted it already: counters never go back.
local function dropToken(user, counter, now)
  if (tonumber(redis.call('ZSCORE', K.texp, user)) or now + 1) <= now then counter = 'expired' end
  redis.call('HDEL', K.tokens, user)
  redis.call('ZREM', K.texp, user)
  redis.call('HINCRBY', K.cfg, counter, 1)
end

-- unmark forgets what a place kept beside its line once it leaves it
-- (memstore's removeFromLine and shadow.take): a shadow place's mark, a
-- cleared place's entry in K.cleared (its score a half above a ticket).
-- It says whether the place held a ticket of the line, whose leaving is a
-- gap the snapshot must know of (K.left).
local function unmark(user, score, shadow)
  if shadow then
    redis.call('HDEL', K.suspects, user)
    return false
  end
  if score % 1 ~= 0 then
    redis.call('ZREM', K.cleared, user)
    return false
  end
  return true
end

-- lineHead is the lowest ticket waiting (a string), cleared places not
-- counted (they have none: queue.Snapshot.Head), or nil; and how many
-- cleared places wait (at most that many stand ahead of it).
local function lineHead()
  local cleared = redis.call('ZCARD', K.cleared)
  local front = redis.call('ZRANGE', K.line, 0, cleared, 'WITHSCORES')
  for i = 2, #front, 2 do
    if tonumber(front[i]) % 1 == 0 then return front[i], cleared end
  end
  return nil, cleared
end
