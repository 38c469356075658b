-- admit: apply one admission tick that admission.PlanTick planned on what
-- tick.lua read, if the tick is still the one read: its due time unchanged.
-- An instance that claimed the tick meanwhile moved it on, and so did this
-- very call if the Redis client re-sent it (the reply came after its read
-- timeout, though Redis ran it): either way this call admits nobody, so no
-- token ever reaches two people. A user planned leaves the line only if
-- they still hold the ticket they were read with (one who left meanwhile is
-- passed over); the admitted get their tokens in the same step, so nobody
-- leaves the line without one. A no-show planned is passed over too if
-- they were seen after the read (asked in between: markSeen), so nobody who
-- asks is skipped as absent. A plan that lets the shadow line in is applied
-- only while its turn holds still (shadowTurn): a person who entered after
-- the read, an opening or a cleared place, is let in first.
--
-- Under queueingMethod random the plan names nobody: it says how many to
-- draw and brings random values (Go's crypto/rand, never Lua's
-- math.random, which Redis seeds alike every time). Each value picks a
-- user at the rank admission.DrawIndex gives in the line as it is now, and that
-- user leaves before the next value is used (a draw without replacement);
-- a no-show drawn (admission.Absence.NoShow: ticket judged, not seen since the
-- bar, both Go's figures) leaves without a token, and the next value
-- draws again. Drawn users leave a gap for snapshot.lua, as leavers do.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] the due time read ('' none)
-- ARGV[2] the tokens' expiry (ms)
-- ARGV[3] the plan, JSON (tick.go's admitPlan):
--         set      {field: value} of the queue's hash to set ('' deletes it)
--         add      {field: n} to add to it
--         admit    [[user, ticket, token], ...] planned, in order
--         noShows  [[user, ticket, seen], ...] to pass over, with the seen
--                  mark read (ms; 0 never)
--         draw     absent, or {n, tokens, values, judged, seenBefore}: how
--                  many to draw, their n tokens, the random values (each
--                  below 2^53), and the no-shows' judged ticket and seen
--                  bar (ms)
--         shadow   true: admit names places of the shadow line (K.shadow;
--                  admission.TickPlan.Shadow), counted shadow_admitted
-- A place cleared from the shadow line is read with its ticket rounded
-- down (its score is a half above it), matched so, and leaves no gap.
-- Reply: {TICK_GONE}; {APPLIED, skipped, n, n admitted users, ..., then
--        for each of them when they took their place and the wait they
--        were shown, "ms shown" (K.joined; nil: not kept)}
local due = ARGV[1]
local expires = ARGV[2]
local plan = cjson.decode(ARGV[3])
if (redis.call('HGET', K.cfg, 'next') or '') ~= due then
  return {TICK_GONE}
end
-- A plan of the shadow line's was read with its turn: gone if it is.
if plan.shadow and not shadowTurn() then return {TICK_GONE} end

-- pop takes the user out of the line, let in or passed over as a no-show,
-- and their seen mark with them (memstore's state.pop); their place's
-- taking (K.joined) goes at the end, once the admitted's is read.
local popped = {}
local line = plan.shadow and K.shadow or K.line
local function pop(user, score)
  redis.call('ZREM', line, user)
  redis.call('ZREM', K.seen, user)
  popped[#popped + 1] = user
  return unmark(user, score, plan.shadow)
end

-- issue writes the user's token (memstore's state.issue).
local function issue(user, token)
  redis.call('HSET', K.tokens, user, token)
  redis.call('ZADD', K.texp, expires, user)
end

-- draw lets in d.n users drawn at random (queue.MethodRandom); its twin
-- is memstore's state.draw, step for step: each value picks the rank admission.DrawIndex
-- gives in the line as it is then, so one drawn leaves before the next is
-- drawn; a no-show drawn (admission.Absence.NoShow: ticket judged, not seen
-- since the bar) leaves without a token. A user drawn leaves a gap in the
-- line, as a leaver does, for the snapshot.
local function draw(d)
  local admitted, skipped, length = {}, 0, redis.call('ZCARD', K.line)
  for _, r in ipairs(d.values) do
    if #admitted == d.n or length == 0 then
      break
    end
    local rank = math.floor(r / 2 ^ 53 * length) -- admission.DrawIndex
    local w = redis.call('ZRANGE', K.line, rank, rank, 'WITHSCORES')
    local user, ticket = w[1], tonumber(w[2])
    local absent = ticket <= d.judged and (tonumber(redis.call('ZSCORE', K.seen, user)) or 0) < d.seenBefore -- admission.Absence.NoShow
    if pop(user, ticket) then redis.call('ZADD', K.left, ticket, ticket) end -- addLeft
    length = length - 1
    if absent then
      skipped = skipped + 1
    else
      issue(user, d.tokens[#admitted + 1])
      admitted[#admitted + 1] = user
    end
  end
  return admitted, skipped
end

local admitted, skipped = {}, 0
if plan.draw then
  admitted, skipped = draw(plan.draw)
end
-- The users planned, admitted first, then the no-shows: each leaves the
-- line if they still hold the ticket read, a no-show only if not seen
-- since their mark was read (one who asked meanwhile is not absent).
local nAdmit = #plan.admit
local planned = append(plan.admit, plan.noShows)
for first = 1, #planned, 1000 do
  local users = {}
  for i = first, math.min(first + 999, #planned) do
    users[#users + 1] = planned[i][1]
  end
  local held = redis.call('ZMSCORE', line, unpack(users))
  for j = 1, #users do
    local i = first + j - 1
    local user, ticket, tokenOrSeen = planned[i][1], planned[i][2], planned[i][3]
    local noShow = i > nAdmit
    if math.floor(tonumber(held[j]) or -1) == ticket and (not noShow or (tonumber(redis.call('ZSCORE', K.seen, user)) or 0) <= tokenOrSeen) then
      pop(user, tonumber(held[j]))
      if noShow then
        skipped = skipped + 1
      else
        issue(user, tokenOrSeen)
        admitted[#admitted + 1] = user
      end
    end
  end
end

for field, n in pairs(plan.add) do
  redis.call('HINCRBY', K.cfg, field, n)
end
if #admitted > 0 then redis.call('HINCRBY', K.cfg, plan.shadow and 'shadow_admitted' or 'admitted', #admitted) end
if skipped > 0 then redis.call('HINCRBY', K.cfg, 'abandoned', skipped) end
local set, unset = {}, {}
for field, value in pairs(plan.set) do
  if value == '' then
    unset[#unset + 1] = field
  else
    append(set, {field, value})
  end
end
if #set > 0 then
  redis.call('HSET', K.cfg, unpack(set))
end
if #unset > 0 then
  redis.call('HDEL', K.cfg, unpack(unset))
end
-- Two commands a tick, not two a user; a thousand at a time, as unpack
-- takes a few thousand values at most.
local reply = append({APPLIED, skipped, #admitted}, admitted)
for i = 1, #admitted, 1000 do
  append(reply, redis.call('HMGET', K.joined, unpack(admitted, i, math.min(i + 999, #admitted))))
end
for i = 1, #popped, 1000 do
  redis.call('HDEL', K.joined, unpack(popped, i, math.min(i + 999, #popped)))
end
return reply
