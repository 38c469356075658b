-- place: put users of a due opening (open_due.lua) in line at its next
-- reserved tickets, in the order given (the caller's draw), renewing the
-- lease. A user no longer in the pre-queue (they left) is passed over. When
-- the pre-queue is empty the opening is done: the reserved tickets left
-- over (those who left) become gaps in `left`, and admission may go on.
--
-- KEYS[1] adm  HASH open_state, open_owner, open_lease, open_next, open_end
-- KEYS[2] pre  ZSET the pre-queue
-- KEYS[3] line ZSET user → ticket
-- KEYS[4] left ZSET tickets of users who left the line
-- ARGV[1] owner, ARGV[2] lease (ms), ARGV[3..] users (at most 1000)
-- Reply: -1 the caller does not hold the lease; 0 placed, more to come;
--        1 placed, and the opening is done
local adm = redis.call('HMGET', KEYS[1], 'open_state', 'open_owner', 'open_next', 'open_end')
if adm[1] ~= 'placing' or adm[2] ~= ARGV[1] then
  return -1
end
local users = {}
for i = 3, #ARGV do
  users[#users + 1] = ARGV[i]
end
local waiting = {}
if #users > 0 then
  waiting = redis.call('ZMSCORE', KEYS[2], unpack(users))
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local next, last = tonumber(adm[3]), tonumber(adm[4])
local adds, placed = {}, {}
for i = 1, #users do
  if waiting[i] then
    adds[#adds + 1] = next
    adds[#adds + 1] = users[i]
    placed[#placed + 1] = users[i]
    next = next + 1
  end
end
if #placed > 0 then
  redis.call('ZADD', KEYS[3], unpack(adds))
  redis.call('ZREM', KEYS[2], unpack(placed))
end
redis.call('HSET', KEYS[1], 'open_next', next, 'open_lease', now + tonumber(ARGV[2]))
if redis.call('ZCARD', KEYS[2]) > 0 then
  return 0
end
for ticket = next, last do
  redis.call('ZADD', KEYS[4], ticket, ticket)
end
redis.call('HSET', KEYS[1], 'open_state', 'open', 'moved', now)
redis.call('HDEL', KEYS[1], 'open_owner', 'open_lease', 'open_next', 'open_end')
return 1
