-- extend: one successful use of an entry token on a session route. With
-- the queue's session_ms set (sessionMaxSeconds), the token's expiry moves
-- to ttl_ms from now, never past the session's end nor back. The session's
-- end is fixed at the first extension, as the token's first expiry less
-- ttl_ms plus session_ms, and kept in the session marker (the token's
-- digest, a space, the end in ms), which lapses with it: a marker of an
-- earlier token of the user is not this token's.
--
-- KEYS the queue's (the generated text's second line names them), then the
--      user's session marker ({q}:session:<user>), last
-- ARGV[1] user id
-- ARGV[2] the token presented
-- Reply: the token's expiry (ms), 0 if the token is invalid (missing,
--        wrong or expired)
local user = ARGV[1]
local presented = ARGV[2]
local marker = KEYS[#KEYS]
local exp, now, digest = liveToken(user, presented)
if not exp then
  return 0
end
local cfg, adm = config()
local ttl, max = tonumber(cfg.ttl_ms), tonumber(adm.phase_session_ms or cfg.session_ms) or 0
if max <= 0 or not ttl then
  return exp
end
local mark = redis.call('GET', marker)
local ends
if mark and string.sub(mark, 1, #digest) == digest then
  ends = tonumber(string.sub(mark, #digest + 2))
end
if not ends then
  ends = exp - ttl + max
  redis.call('SET', marker, digest .. ' ' .. ends)
  redis.call('PEXPIREAT', marker, ends + 1000)
end
local next = math.min(now + ttl, ends)
if next > exp then
  redis.call('ZADD', K.texp, next, user)
  return next
end
return exp
