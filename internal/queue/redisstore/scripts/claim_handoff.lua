-- claim_handoff: carry the place a handoff code was kept for (by
-- put_handoff.lua) to the session claiming it (issue 55), in one step. The
-- code must still name from (Go read it to name from's keys), and is
-- deleted: single use. A claimer holding a place or a live token, or a
-- place whose token an order is using (begin_use.lua's lock), changes
-- nothing and keeps the code. Otherwise every entry of the user's place
-- in every key of the queue (keys.go) moves to user as it was: the score
-- in K.line or K.lanes (the ticket, with its lane's band), K.shadow and
-- the suspect's mark in K.suspects, K.cleared's score, the pre-queue's
-- arrival and K.prelanes' lane, the seen mark, K.joined's taking, a
-- READY entry's token and expiry, and the sliding session's marker. A
-- lapsed lock of from's is dropped. from is marked moved (status.lua
-- answers MOVED) for the longer of ARGV[3] and the token's lifetime.
--
-- KEYS the queue's (the generated text's second line names them), then
--      the code's key ({q}:handoff:<hash>), from's and user's session
--      markers ({q}:session:<user>), from's and user's moved marks
--      ({q}:moved:<user>), last
-- ARGV[1] from: the user the code named when Go read it
-- ARGV[2] user: the session claiming
-- ARGV[3] how long from is told MOVED at least (ms)
-- Reply: {UNKNOWN_QUEUE}; {HANDOFF_GONE}: no such code, or its place is
--        gone (the code is deleted); {IN_LINE_ALREADY}; {IN_USE}; else
--        status.lua's reply for user, the place now theirs
local from = ARGV[1]
local user = ARGV[2]
local movedMs = tonumber(ARGV[3])
local code, fromSession, userSession, fromMoved, userMoved = KEYS[#KEYS - 4], KEYS[#KEYS - 3], KEYS[#KEYS - 2], KEYS[#KEYS - 1], KEYS[#KEYS]
local cfg, adm, refused = config({'rate'}, {'ttl_ms'})
if refused then return refused end
if redis.call('GET', code) ~= from then return {HANDOFF_GONE} end
local now = clock()
local length = redis.call('ZCARD', K.line)
local mine, expired = standing(cfg, adm, user, now, length)
if mine then return {IN_LINE_ALREADY} end
local lock = tonumber(redis.call('ZSCORE', K.inflight, from))
if lock and lock > now then return {IN_USE} end
redis.call('DEL', code)
local held = standing(cfg, adm, from, now, length)
if not held or adm.open_state == 'placing' and (held[1] == PRE_QUEUE or held[1] == LANE_PRE_QUEUE) then
  return {HANDOFF_GONE}
end
if expired then dropToken(user, 'expired', now) end
-- Scores travel as Redis wrote them (text): a lane's band and a cleared
-- place's half stay exact.
for _, key in ipairs({K.line, K.lanes, K.shadow, K.cleared, K.pre, K.seen, K.texp}) do
  local score = redis.call('ZSCORE', key, from)
  if score then
    redis.call('ZREM', key, from)
    redis.call('ZADD', key, score, user)
  end
end
for _, key in ipairs({K.joined, K.suspects, K.prelanes, K.tokens}) do
  local v = redis.call('HGET', key, from)
  if v then
    redis.call('HDEL', key, from)
    redis.call('HSET', key, user, v)
  end
end
redis.call('ZREM', K.inflight, from)
redis.call('HDEL', K.owners, from)
local session = redis.call('GET', fromSession)
if session then
  redis.call('SET', userSession, session, 'PX', math.max(redis.call('PTTL', fromSession), 1))
  redis.call('DEL', fromSession)
end
redis.call('DEL', userMoved)
redis.call('SET', fromMoved, '1', 'PX', math.max(movedMs, tonumber(cfg.ttl_ms) or 0))
length = redis.call('ZCARD', K.line)
return pace(standing(cfg, adm, user, now, length), cfg, adm, now, everyone(adm, length))
