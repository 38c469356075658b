-- place: put users of a due opening (open_due.lua) in line at its next
-- reserved tickets, in the order given (the caller's draw), renewing the
-- lease. A user no longer in the pre-queue (they left) is passed over. When
-- the pre-queue is empty the opening is done: the reserved tickets left
-- over (those who left) become gaps in `left`, and admission may go on.
--
-- KEYS the queue's (the generated text's second line names them): in cfg,
--      open_state, open_owner, open_lease, open_next, open_end; pre, line,
--      and left for the gaps
-- ARGV[1] owner, ARGV[2] lease (ms), ARGV[3..] users (at most 1000)
-- Reply: NOT_OWNER the caller does not hold the lease; MORE_TO_PLACE
--        placed, more to come; OPENED placed, and the opening is done
local owner = ARGV[1]
local leaseMs = tonumber(ARGV[2])
local users = {unpack(ARGV, 3)}
local _, adm = config()
if adm.open_state ~= 'placing' or adm.open_owner ~= owner then
  return NOT_OWNER
end
local waiting = {}
if #users > 0 then
  waiting = redis.call('ZMSCORE', K.pre, unpack(users))
end
local now = clock()

local next, last = tonumber(adm.open_next), tonumber(adm.open_end)
local adds, placed, joined = {}, {}, {}
for i = 1, #users do
  if waiting[i] then
    adds[#adds + 1] = next
    adds[#adds + 1] = users[i]
    placed[#placed + 1] = users[i]
    -- Their place's taking (enter.lua's): shown the opening's time, no wait.
    append(joined, {users[i], now .. ' -1'})
    next = next + 1
  end
end
if #placed > 0 then
  redis.call('ZADD', K.line, unpack(adds))
  redis.call('ZREM', K.pre, unpack(placed))
  redis.call('HSET', K.joined, unpack(joined))
end
redis.call('HSET', K.cfg, 'open_next', next, 'open_lease', now + leaseMs)
if redis.call('ZCARD', K.pre) > 0 then
  return MORE_TO_PLACE
end
for ticket = next, last do
  redis.call('ZADD', K.left, ticket, ticket)
end
redis.call('HSET', K.cfg, 'open_state', 'open', 'moved', now)
redis.call('HDEL', K.cfg, 'open_owner', 'open_lease', 'open_next', 'open_end')
return OPENED
