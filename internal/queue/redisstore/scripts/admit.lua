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
-- bar, hiddenBefore for a hidden mark, Go's figures) leaves without a token,
-- and the next value draws again. Drawn users leave a gap for snapshot.lua, as leavers do.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] the due time read ('' none)
-- ARGV[2] the tokens' expiry (ms)
-- ARGV[3] the plan, JSON (tick.go's admitPlan):
--         set      {field: value} of the queue's hash to set ('' deletes it)
--         add      {field: n} to add to it
--         admit    [[user, ticket, token], ...] planned, in order
--         noShows  [[user, ticket, seen], ...] to pass over, with the seen
--                  mark read (ms, its absolute value; 0 never)
--         draws    absent, or [{n, tokens, values, judged, seenBefore,
--                  hiddenBefore, lane, id}, ...]: each a draw of how many
--                  to draw, their n tokens, the random values (each below
--                  2^53), the no-shows' judged ticket and seen bars (ms;
--                  K.seen's mark is negative for a hidden page), and
--                  for a lane other than the public its name and id
--                  (K.laneids; absent: the public line)
--         laneAdmit, laneNoShows  absent, or as admit and noShows, each
--                  [user, ticket, tokenOrSeen, lane], of other lanes
--         lanes    true: the queue has lanes; each admitted counts on
--                  their lane (K.lanestats admitted:<lane>)
--         shadow   true: admit names places of the shadow line (K.shadow;
--                  admission.TickPlan.Shadow), counted shadow_admitted
-- A place cleared from the shadow line is read with its ticket rounded
-- down (its score is a half above it), matched so, and leaves no gap.
-- Reply: {TICK_GONE}; {APPLIED, skipped, n, n admitted users, ..., then
--        for each of them when they took their place and the wait they
--        were shown, "ms shown low high" (K.joined; nil: not kept; "ms
--        shown" as an earlier version kept it), then, only when
--        the last draw is a lane's (a lane other than the public drew: the
--        public's draw comes first), how many each draw let in, in order}
-- The admitted are in the order let in: the drawn, draw by draw, then the
-- planned, so Go knows each one's lane (rollup.Wait.Lane).
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
local function pop(user, score, key)
  redis.call('ZREM', key or line, user)
  redis.call('ZREM', K.seen, user)
  popped[#popped + 1] = user
  return unmark(user, score, plan.shadow)
end

-- issue writes the user's token (memstore's state.issue), and counts them
-- on their lane (plan.lanes: the queue has lanes).
local admitted, skipped, byLane = {}, 0, {}
local function issue(user, token, lane)
  redis.call('HSET', K.tokens, user, token)
  redis.call('ZADD', K.texp, expires, user)
  admitted[#admitted + 1] = user
  byLane[lane or 'public'] = (byLane[lane or 'public'] or 0) + 1
end

-- draw lets in d.n users drawn at random (queue.MethodRandom); its twin
-- is memstore's state.draw, step for step: each value picks the rank admission.DrawIndex
-- gives in the line as it is then, so one drawn leaves before the next is
-- drawn; a no-show drawn (admission.Absence.NoShow: ticket judged, not seen
-- since the bar) leaves without a token. A user drawn leaves a gap in the
-- line, as a leaver does, for the snapshot. In a lane other than the
-- public (d.lane, d.id: issue 53), the draw is among its band of K.lanes
-- only, whose tickets are gaps already.
local function draw(d)
  local key, base, length = K.line, 0, redis.call('ZCARD', K.line)
  if d.lane then
    key, base = K.lanes, redis.call('ZCOUNT', K.lanes, '-inf', '(' .. scoreText(d.id * BAND))
    length = redis.call('ZCOUNT', K.lanes, '-inf', '(' .. scoreText((d.id + 1) * BAND)) - base
  end
  local n = 0
  for _, r in ipairs(d.values) do
    if n == d.n or length == 0 then break end
    local rank = base + math.floor(r / 2 ^ 53 * length) -- admission.DrawIndex
    local w = redis.call('ZRANGE', key, rank, rank, 'WITHSCORES')
    local user, ticket = w[1], tonumber(w[2]) % BAND
    local seen = tonumber(redis.call('ZSCORE', K.seen, user)) or 0
    local absent = ticket <= d.judged and (seen < 0 and -seen < d.hiddenBefore or seen >= 0 and seen < d.seenBefore) -- admission.Absence.NoShow
    if pop(user, tonumber(w[2]), key) and not d.lane then redis.call('ZADD', K.left, ticket, ticket) end -- addLeft
    length = length - 1
    if absent then
      skipped = skipped + 1
    else
      n = n + 1
      issue(user, d.tokens[n], d.lane)
    end
  end
  return n
end

local draws, drawn = plan.draws or {}, {}
for i, d in ipairs(draws) do drawn[i] = draw(d) end
-- The users planned, admitted first, then the no-shows: each leaves the
-- line if they still hold the ticket read, a no-show only if not seen
-- since their mark was read (one who asked meanwhile is not absent; a
-- mark's time is its absolute value, hidden or not). Those
-- of other lanes than the public (issue 53) are planned apart: their
-- places are in K.lanes, their lane fourth.
local function apply(planned, nAdmit, key)
  for first = 1, #planned, 1000 do
    local users = {}
    for i = first, math.min(first + 999, #planned) do
      users[#users + 1] = planned[i][1]
    end
    local held = redis.call('ZMSCORE', key, unpack(users))
    for j = 1, #users do
      local i = first + j - 1
      local user, ticket, tokenOrSeen = planned[i][1], planned[i][2], planned[i][3]
      local noShow = i > nAdmit
      if math.floor((tonumber(held[j]) or -1) % BAND) == ticket and (not noShow or math.abs(tonumber(redis.call('ZSCORE', K.seen, user)) or 0) <= tokenOrSeen) then
        pop(user, tonumber(held[j]), key)
        if noShow then skipped = skipped + 1 else issue(user, tokenOrSeen, planned[i][4]) end
      end
    end
  end
end
local nAdmit, laneAdmit = #plan.admit, plan.laneAdmit or {} -- counted before append adds to them
local nLaneAdmit = #laneAdmit
apply(append(plan.admit, plan.noShows), nAdmit, line)
apply(append(laneAdmit, plan.laneNoShows or {}), nLaneAdmit, K.lanes)

for field, n in pairs(plan.add) do
  redis.call('HINCRBY', K.cfg, field, n)
end
if #admitted > 0 then redis.call('HINCRBY', K.cfg, plan.shadow and 'shadow_admitted' or 'admitted', #admitted) end
for lane, n in pairs(plan.lanes and byLane or {}) do redis.call('HINCRBY', K.lanestats, 'admitted:' .. lane, n) end
if skipped > 0 then redis.call('HINCRBY', K.cfg, 'abandoned', skipped) end
local set, unset = {}, {}
for field, value in pairs(plan.set) do
  if value == '' then unset[#unset + 1] = field else append(set, {field, value}) end
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
if #draws > 0 and draws[#draws].lane then append(reply, drawn) end
return reply
