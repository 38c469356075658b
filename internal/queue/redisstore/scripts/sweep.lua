-- sweep: the janitor's step, kept out of admission's hot path (the
-- Admitter runs it about once a second per queue). It forgets tokens whose
-- time is up, counting them expired, lapsed in-flight locks and leavers
-- below the line's head, at most 1000 of each kind per call. Nothing waits
-- for it: every other script reads expiry itself, and snapshot.lua reads
-- leavers from the head on.
--
-- KEYS the queue's (the generated text's second line names them)
-- Reply: 1 when there may be more to sweep, else 0
local now = clock()
local expired = redis.call('ZRANGEBYSCORE', K.texp, '-inf', now, 'LIMIT', 0, 1000)
if #expired > 0 then
  redis.call('HDEL', K.tokens, unpack(expired))
  redis.call('ZREM', K.texp, unpack(expired))
  redis.call('HINCRBY', K.cfg, 'expired', #expired)
end
local lapsed = redis.call('ZRANGEBYSCORE', K.inflight, '-inf', now, 'LIMIT', 0, 1000)
if #lapsed > 0 then
  redis.call('ZREM', K.inflight, unpack(lapsed))
  redis.call('HDEL', K.owners, unpack(lapsed))
end
local head = redis.call('ZRANGE', K.line, 0, 0, 'WITHSCORES')
if head[2] then
  redis.call('ZREMRANGEBYSCORE', K.left, '-inf', '(' .. head[2])
else
  redis.call('DEL', K.left) -- anyone who comes is behind every one of them
end
if #expired == 1000 or #lapsed == 1000 then
  return 1
end
return 0
