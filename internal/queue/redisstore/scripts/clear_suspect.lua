-- clear_suspect: an operator clears a place of the shadow line into the
-- line (queue.Store.ClearSuspect), where a person arriving when it did
-- would stand. While an opening is ahead, that is its pre-queue (K.pre),
-- arriving now: the opening draws or orders it with the others, and its
-- reserved ticket counts its join (cleared_pre: stats.lua counts it once).
-- Else the line: just behind its behind ticket, or, when that ticket is
-- no longer waiting, first (just behind the head); with nobody waiting,
-- behind the last ticket; while an opening is being placed, behind its
-- last reserved ticket too (open_end: its unplaced are ahead). Its score
-- is that ticket + 0.5, so it ranks after the ticket and before the next
-- (places cleared to one ticket rank by user id, as Redis orders equal
-- scores), its taking (K.joined) is kept, and K.cleared lists it for the
-- snapshot (queue.Snapshot.Cleared). It counts as one more join (cleared;
-- stats.lua). Under abandon_ms it is seen now, as one entering is: its
-- client, answered as a shadow place until now, has left no seen mark,
-- and the next tick would skip it as a no-show.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] its shadow ticket
-- Reply: {UNKNOWN_QUEUE}; 1 cleared; 0 no such place
local ticket = ARGV[1]
local cfg, adm, refused = config()
if refused then return refused end
local user = redis.call('ZRANGEBYSCORE', K.shadow, ticket, ticket)[1]
if not user then return 0 end
local behind = behindOf(user)
redis.call('ZREM', K.shadow, user)
unmark(user, 0, true)
redis.call('HINCRBY', K.cfg, 'cleared', 1)
if (tonumber(cfg.opens_at) or 0) > 0 and not adm.open_state then
  redis.call('ZADD', K.pre, 'NX', (clock()), user)
  redis.call('HDEL', K.joined, user) -- placing writes it, as for everyone it places
  redis.call('HINCRBY', K.cfg, 'cleared_pre', 1)
  return 1
end
local head = lineHead()
local at = head and math.max(behind, tonumber(head) - 1) or tonumber(redis.call('GET', K.seq) or '0')
local _, last = unplaced(adm)
at = math.max(at, last or 0)
if redis.call('ZCARD', K.line) == 0 then
  redis.call('HSET', K.cfg, 'moved', (clock())) -- someone starts waiting, as in enter.lua
end
local score = at .. '.5' -- Redis takes no Lua fractions as arguments
redis.call('ZADD', K.line, score, user)
redis.call('ZADD', K.cleared, score, user)
if (tonumber(cfg.abandon_ms) or 0) > 0 then redis.call('ZADD', K.seen, (clock()), user) end
return 1
