-- stats: the operator's numbers for one queue, read at one instant. Changes
-- nothing (a metrics scrape must never write): tokens whose time is up but
-- that the janitor (sweep.lua) has not swept yet count as expired here, as
-- they will once swept, so the totals add up exactly:
--   entered  = length + admitted + left + abandoned (+ preQueued while an
--              opening is placed: they hold reserved tickets)
--   admitted = consumed + active + expired + returned
--
-- The config comes in the same step: a stamp read apart from the state it
-- stamps (paused_at from here, paused from a later read) would name a
-- change that never happened (a resume's stamp with the pause after it:
-- a pause at the resume's instant, told to the shop by package events).
--
-- KEYS the queue's (the generated text's second line names them); seq
--      counts the joins
-- ARGV the config's fields (redisstore.go's settingFields, every setting)
-- Reply: {UNKNOWN_QUEUE}, else
--        {length, admitted, consumed, active, measured, win_start,
--         entered, left, expired, returned, admittedInline, abandoned,
--         preQueued, eff_rate, eff_why, now, units_left ('' not known),
--         paused_at, method_at, sold_out_at (ms; 0: not changed),
--         shadowLength, shadowEntered, shadowAdmitted, shadowLeft,
--         cleared, then ARGV's fields' values (nil: not set), then
--         {lane, length, ...} of the public and every lane (K.laneids),
--         then K.lanestats as {field, value, ...}}; length is every
--         lane's; entered is seq's joins and the places cleared from the
--         shadow line (cleared), but for those cleared into an opening's
--         pre-queue (cleared_pre): seq counted their reserved tickets
local _, adm, refused = config()
if refused then return refused end
local now = clock()
local unswept = redis.call('ZCOUNT', K.texp, '-inf', now)
local function n(v) return tonumber(v) or 0 end
local reply = append({
  redis.call('ZCARD', K.line) + redis.call('ZCARD', K.lanes), n(adm.admitted), n(adm.consumed), redis.call('ZCARD', K.texp) - unswept,
  adm.measured or '0', n(adm.win_start), n(redis.call('GET', K.seq)) + n(adm.cleared) - n(adm.cleared_pre), n(adm.left), n(adm.expired) + unswept,
  n(adm.returned), n(adm.inline_total), n(adm.abandoned), redis.call('ZCARD', K.pre), adm.eff_rate or '',
  adm.eff_why or '', now, adm.units_left or '', n(adm.paused_at), n(adm.method_at), n(adm.sold_out_at),
  redis.call('ZCARD', K.shadow), n(adm.shadow_seq), n(adm.shadow_admitted), n(adm.shadow_left), n(adm.cleared),
}, redis.call('HMGET', K.cfg, unpack(ARGV)))
-- The lanes (issue 53): each but the public with its length, then their
-- counters.
local ids, lanes = redis.call('HGETALL', K.laneids), {'public', redis.call('ZCARD', K.line)}
for i = 1, #ids, 2 do
  if string.sub(ids[i], 1, 1) ~= '#' then
    local lo = tonumber(ids[i + 1]) * BAND
    append(lanes, {ids[i], redis.call('ZCOUNT', K.lanes, scoreText(lo), '(' .. scoreText(lo + BAND))})
  end
end
reply[#reply + 1] = lanes
reply[#reply + 1] = redis.call('HGETALL', K.lanestats)
return reply
