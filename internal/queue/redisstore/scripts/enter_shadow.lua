-- enter_shadow: a suspect's place (queue.Store.EnterShadow, issue 51), in
-- one step. Already in line, in the shadow line or the pre-queue, or
-- holding a valid token → where they stand (standing), as enter.lua
-- answers; shadow line full (shadow_capacity, apart from the line's
-- capacity) → refused; sold out → refused; otherwise the next shadow
-- ticket (shadow_seq, an INCR of the queue's hash) and a place in
-- K.shadow, its mark in K.suspects ("behind|address|signals": behind is
-- the real line's last ticket, and while an opening is ahead the tickets
-- its pre-queue will take too) and its taking in K.joined (no wait shown:
-- -1), kept if it is cleared into the line or let in.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] user id, ARGV[2] the mark's address (a keyed hash, no '|'),
--         ARGV[3..] the mark's signals
-- Reply: {UNKNOWN_QUEUE}; an error starting DAMAGED (nothing written)
--        when the config lacks a field this script needs; {LINE_FULL};
--        {SOLD_OUT}; else standing's, then the pace block (status.lua's)
local user, address = ARGV[1], ARGV[2]
local signals = {unpack(ARGV, 3)}
local cfg, adm, refused = config({'rate', 'batch'}, {'abandon_ms', 'opens_at', 'shadow_capacity'})
if refused then return refused end
local now = clock()
local length = redis.call('ZCARD', K.line)
local held, expired = standing(cfg, adm, user, now, length)
if held then
  if held[1] == WAITING or held[1] == LANE then markSeen(cfg, adm, user, held[2], now) end
  return pace(held, cfg, adm, now, length)
end
if expired then dropToken(user, 'expired', now) end
-- A queue stored before the setting existed has its default (queue.Settings).
if redis.call('ZCARD', K.shadow) >= (tonumber(cfg.shadow_capacity) or 100000) then return {LINE_FULL} end
if adm.units_left == '0' then return {SOLD_OUT} end
local behind = tonumber(redis.call('GET', K.seq) or '0')
if (tonumber(cfg.opens_at) or 0) > 0 and not adm.open_state then
  behind = behind + redis.call('ZCARD', K.pre)
end
local ticket = redis.call('HINCRBY', K.cfg, 'shadow_seq', 1)
redis.call('ZADD', K.shadow, ticket, user)
redis.call('HSET', K.suspects, user, behind .. '|' .. address .. '|' .. table.concat(signals, ','))
redis.call('HSET', K.joined, user, now .. ' -1')
return pace(shadowStanding(cfg, adm, user, ticket, length), cfg, adm, now, length)
