-- admit_now: let a user straight in while the line is quiet (gateway mode:
-- nobody should see a waiting page on an ordinary day), in one step, as
-- the gateway asks it for every newcomer.
--
-- A user already in line (or in an opening's pre-queue) keeps their place;
-- one holding a valid token gets it back. Anyone else is admitted at once,
-- with the token given, only if nobody waits (in any lane), the queue is not paused, no
-- opening is ahead or being placed, the next admission tick's quota still
-- has room (admission.MayAdmitNow: those let in this way come out of it, so the
-- global rate holds; under the passthrough method the rate holds nobody
-- back), the queue is not sold out, and the live-token cap has room: at
-- most max_active (a phase's own, phase_max_active, while it lasts), and
-- the units left × per_unit. Such a user counts as
-- having entered and been admitted, so the totals in stats.lua still
-- balance; their ticket is below any later one, so snapshots are unaffected.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] user id
-- ARGV[2] a fresh token, written if the user is admitted
-- Reply: {UNKNOWN_QUEUE}; an error starting DAMAGED (nothing written)
--        when the config lacks a field this script needs; else standing's,
--        then the pace block:
--        {NOT_IN_LINE, pace...} not admitted (the line is busy)
--        {WAITING, position, length, ticket, pace...}
--        {READY, token, expiresAtMs, pace...}
--        {PRE_QUEUE, pace...} waiting for the opening
local user, token = ARGV[1], ARGV[2]
local cfg, adm, refused = config({'rate', 'batch', 'interval_ms', 'ttl_ms'}, {'max_active', 'opens_at', 'min_rate', 'max_rate'})
if refused then return refused end
local now = clock()
local length = redis.call('ZCARD', K.line)
local held, expired = standing(cfg, adm, user, now, length)
if held then
  return pace(held, cfg, adm, now, length)
end

local busy = pace({NOT_IN_LINE}, cfg, adm, now, length)
-- Nobody waits in any lane (issue 53; looked for as standing does).
if cfg.paused == '1' or length > 0 or opening(cfg, adm) or (adm.lane_shares and redis.call('ZCARD', K.lanes) > 0) then
  return busy
end
local quota = (tonumber(adm.phase_rate) or rateInForce(cfg, adm.eff_rate)) * tonumber(cfg.interval_ms) / 1000 + (tonumber(adm.carry) or 0)
if (adm.phase_method or cfg.method) ~= 'passthrough' and (tonumber(adm.inline) or 0) >= math.min(math.floor(quota), tonumber(cfg.batch)) then
  return busy
end
local maxActive = tonumber(adm.phase_max_active or cfg.max_active) or 0
local limit = maxActive > 0 and maxActive or nil
local units, perUnit = tonumber(adm.units_left), tonumber(cfg.per_unit) or 0
if units == 0 then return busy end
if units and perUnit > 0 then limit = math.min(limit or math.huge, math.floor(units * perUnit)) end
if limit and redis.call('ZCOUNT', K.texp, '(' .. now, '+inf') >= limit then
  return busy
end

if expired then -- forget it, as enter.lua does
  redis.call('HINCRBY', K.cfg, 'expired', 1)
end
redis.call('INCR', K.seq)
redis.call('HSET', K.tokens, user, token)
redis.call('ZADD', K.texp, now + tonumber(cfg.ttl_ms), user)
for _, counter in ipairs({'inline', 'inline_total', 'admitted', 'win_count'}) do
  redis.call('HINCRBY', K.cfg, counter, 1)
end
return pace({READY, token, now + tonumber(cfg.ttl_ms)}, cfg, adm, now, length)
