-- put_handoff: keep a handoff code (its hash: the key's name) for a while
-- as the way to carry user's place to another session (issue 55): only
-- while they hold one (standing's: in the line, a lane, the shadow line,
-- the pre-queue) or a live token; not in an opening's pre-queue while it
-- is placed, whose draw's participants were fixed by name at its close.
-- The key lapses with the code, so nothing sweeps it.
--
-- KEYS the queue's (the generated text's second line names them), then
--      the code's key ({q}:handoff:<hash>), last
-- ARGV[1] user id
-- ARGV[2] the code's lifetime (ms)
-- Reply: {UNKNOWN_QUEUE}; {NOT_IN_LINE}: no place to hand off;
--        {HANDOFF_KEPT, expiresAtMs}
local user = ARGV[1]
local ttl = tonumber(ARGV[2])
local code = KEYS[#KEYS]
local cfg, adm, refused = config({'rate'}, {})
if refused then return refused end
local now = clock()
local held = standing(cfg, adm, user, now, redis.call('ZCARD', K.line))
if not held or adm.open_state == 'placing' and (held[1] == PRE_QUEUE or held[1] == LANE_PRE_QUEUE) then
  return {NOT_IN_LINE}
end
redis.call('SET', code, user, 'PX', ttl)
return {HANDOFF_KEPT, now + ttl}
