-- place: put users of a due opening (open_due.lua) in line, in the order
-- drawn: users[i] at the reserved ticket first + i - 1, where first must be
-- open_next (else another call placed them: NOT_OWNER, nothing written),
-- renewing the lease. A user no longer in the pre-queue (they left), or ""
-- (one the caller cannot name), leaves their ticket a gap in `left`, as a
-- leaver does. When the pre-queue is empty the opening is done: the
-- reserved tickets left over (those who left) become gaps too, the list
-- closed (open_due.lua) is dropped, and admission may go on.
--
-- KEYS the queue's (the generated text's second line names them): in cfg,
--      open_state, open_owner, open_lease, open_first, open_next, open_end;
--      pre, line, joined, and left for the gaps; closed, dropped when done;
--      prelanes, the lane each was placed in (none: the public), and
--      lanes, laneids for those in another (a gap in the public line too)
-- ARGV[1] owner, ARGV[2] lease (ms), ARGV[3] first, ARGV[4..] users (at
--         most 1000)
-- Reply: NOT_OWNER the caller does not hold the lease, or first is not
--        open_next; MORE_TO_PLACE placed, more to come; OPENED placed, and
--        the opening is done; an error when the users run past the
--        reserved tickets (nothing written)
local owner = ARGV[1]
local leaseMs = tonumber(ARGV[2])
local first = tonumber(ARGV[3])
local users = {unpack(ARGV, 4)}
local _, adm = config()
if adm.open_state ~= 'placing' or adm.open_owner ~= owner or tonumber(adm.open_next) ~= first then
  return NOT_OWNER
end
local last = tonumber(adm.open_end)
if first + #users - 1 > last then
  return redis.error_reply('PLACE ' .. #users .. ' users from ticket ' .. first .. ' run past the last reserved, ' .. last)
end
local waiting, lanes = {}, {}
if #users > 0 then
  waiting = redis.call('ZMSCORE', K.pre, unpack(users))
  lanes = redis.call('HMGET', K.prelanes, unpack(users))
end
local now = clock()

local adds, placed, joined, gaps = {}, {}, {}, {}
for i = 1, #users do
  local ticket = first + i - 1
  if waiting[i] and users[i] ~= '' and lanes[i] then
    -- Into the lane they joined the pre-queue for (issue 53): a gap in the public line.
    redis.call('ZADD', K.lanes, scoreText(laneId(lanes[i], true) * BAND + ticket), users[i])
    append(gaps, {ticket, ticket})
    placed[#placed + 1] = users[i]
    append(joined, {users[i], now .. ' -1'})
    if not adm.lane_shares then -- standing looks in K.lanes from now on (join.lua)
      redis.call('HSET', K.cfg, 'lane_shares', '-')
      adm.lane_shares = '-'
    end
  elseif waiting[i] and users[i] ~= '' then
    append(adds, {ticket, users[i]})
    placed[#placed + 1] = users[i]
    -- Their place's taking (enter.lua's): shown the opening's time, no wait.
    append(joined, {users[i], now .. ' -1'})
  else
    append(gaps, {ticket, ticket})
  end
end
if #adds > 0 then redis.call('ZADD', K.line, unpack(adds)) end
if #placed > 0 then
  redis.call('ZREM', K.pre, unpack(placed))
  redis.call('HDEL', K.prelanes, unpack(placed))
  redis.call('HSET', K.joined, unpack(joined))
end
if #gaps > 0 then
  redis.call('ZADD', K.left, unpack(gaps))
end
local next = first + #users
redis.call('HSET', K.cfg, 'open_next', next, 'open_lease', now + leaseMs)
if redis.call('ZCARD', K.pre) > 0 then
  return MORE_TO_PLACE
end
for ticket = next, last do
  redis.call('ZADD', K.left, ticket, ticket)
end
redis.call('HSET', K.cfg, 'open_state', 'open', 'moved', now)
redis.call('HDEL', K.cfg, 'open_owner', 'open_lease', 'open_at', 'open_first', 'open_next', 'open_end')
redis.call('DEL', K.closed)
return OPENED
