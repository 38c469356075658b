-- tick: read what one admission tick needs (admission.TickInput) and a stretch
-- of the line's front, in one step, for admission.PlanTick to decide in Go;
-- admit.lua applies the plan. A tick that passes over no-shows, or looks at
-- the edge of their reach, reads further stretches with this script again.
-- Changes nothing.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] the front's first rank to read (0-based), ARGV[2] how many
--         (≤ 1000), ARGV[3] 'shadow' to read the shadow line's front
--         (shadowAdmits last, the line empty) instead of the line's,
--         or a lane's id (K.laneids) to read that lane's (issue 53),
--         ARGV[4..] the fields of the queue's hash Go reads (tick.go's
--         tickReads: every setting, the epoch, the tick state)
-- Reply: {now, length, live tokens, shadow line's length, the fields'
--        values..., {lane, id, length, ...} of every lane but the public,
--        then user, ticket, last seen (ms, negative for a hidden page;
--        nil: never), ...}; Go tells an
--        unknown queue by its fields
local from = tonumber(ARGV[1])
local n = tonumber(ARGV[2])
local line = ARGV[3] == 'shadow' and K.shadow or K.line
local lane = tonumber(ARGV[3]) -- a lane's id: its band of K.lanes
local fields = {unpack(ARGV, 4)}
local now = clock()
local reply = {now, redis.call('ZCARD', K.line), redis.call('ZCOUNT', K.texp, '(' .. now, '+inf'), redis.call('ZCARD', K.shadow)}
local values = redis.call('HMGET', K.cfg, unpack(fields))
append(reply, values)
-- Every lane but the public, with its length, where there may be some
-- (adm.lane_shares set: standing's rule), read with the public line's front.
local lanes = {}
for i = 1, #fields do
  if fields[i] == 'lane_shares' and values[i] and ARGV[3] == '' then
    local ids = redis.call('HGETALL', K.laneids)
    for j = 1, #ids, 2 do
      if string.sub(ids[j], 1, 1) ~= '#' then
        local lo = tonumber(ids[j + 1]) * BAND
        append(lanes, {ids[j], ids[j + 1], redis.call('ZCOUNT', K.lanes, scoreText(lo), '(' .. scoreText(lo + BAND))})
      end
    end
  end
end
reply[#reply + 1] = lanes
local users, base = {}, 0
if lane then
  line, base = K.lanes, redis.call('ZCOUNT', K.lanes, '-inf', '(' .. scoreText(lane * BAND))
end
if n > 0 then
  users = redis.call('ZRANGE', line, base + from, base + from + n - 1, 'WITHSCORES')
end
local names = {}
for i = 1, #users, 2 do
  if lane and math.floor(tonumber(users[i + 1]) / BAND) ~= lane then break end -- past the lane's band
  names[#names + 1] = users[i]
  if lane then users[i + 1] = tonumber(users[i + 1]) % BAND end
end
if #names == 0 then
  return reply
end
local seen = redis.call('ZMSCORE', K.seen, unpack(names))
for i = 1, #names do
  append(reply, {names[i], users[2 * i], seen[i]})
end
return reply
