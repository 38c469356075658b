-- prelude: the functions scripts share. The store puts in front of each
-- script only the functions it calls (prelude.go: Redis runs a script's
-- whole text on every call), and writes for it: K.name as the KEYS[i] it
-- names (a script gets as KEYS only the queue's keys it names, in keys.go's
-- order); TICK and SETTINGS, lists of field names, where used;
-- config(need, may) and readAdmission(), one HMGET each of the config's and
-- the admission hash's fields the script names (cfg.x, adm.x, need and may)
-- and its reply carries, cfg.x and adm.x written as the index of x in the
-- list read (cfg[2]), so no table of names is built per call; config
-- refuses with {-1} for an unknown queue and with a DAMAGED error when a
-- field in need is missing or not a number, or one in may is there and not
-- a number. Each function is one paragraph with its comment (no blank line
-- inside): prelude.go takes them apart at the blank lines.

-- clock is Redis TIME in ms (and TIME): all instances' one clock, read here only.
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), t
end

-- hash reads a hash's fields by name: hash(K.adm, 'a', 'b').b (scripts
-- off the hot path; the hot ones read with config and readAdmission).
local function hash(key, ...)
  local names, out = {...}, {}
  local values = redis.call('HMGET', key, unpack(names))
  for i = 1, #names do
    out[names[i]] = values[i]
  end
  return out
end

-- append adds list's items to reply.
local function append(reply, list)
  for i = 1, #list do
    reply[#reply + 1] = list[i]
  end
  return reply
end

-- damaged is a DAMAGED error when a field of cfg named in need is missing
-- or not a number, else nil (scripts off the hot path; config checks its own).
-- Scripts check what they read before their first write (Redis does not
-- roll a script back); a read-only one answers clearly rather than with 0.
local function damaged(cfg, need)
  for _, name in ipairs(need) do
    if not tonumber(cfg[name]) then
      return redis.error_reply('DAMAGED queue config ' .. K.cfg .. ': ' .. name .. ' missing or not a number')
    end
  end
end

-- rateInForce is queue.Config.RateInForce: eff, the adaptive rate stored,
-- within its bounds while the rate is adaptive, else the configured rate.
local function rateInForce(cfg, eff)
  if cfg.adaptive == '1' and tonumber(eff) and tonumber(cfg.min_rate) and tonumber(cfg.max_rate) then
    return math.max(tonumber(cfg.min_rate), math.min(tonumber(eff), tonumber(cfg.max_rate)))
  end
  return tonumber(cfg.rate)
end

-- pace appends to reply the block an answer about the line carries, read in
-- the same step (queue.LinePace): the config and admission fields read
-- (Go reads them by name), now and the line's length.
local function pace(reply, cfg, adm, now, length)
  local n = #reply
  for i = 1, #cfg do
    reply[n + i] = cfg[i]
  end
  n = n + #cfg
  for i = 1, #adm do
    reply[n + i] = adm[i]
  end
  n = n + #adm
  reply[n + 1], reply[n + 2] = now, length
  return reply
end

-- opening is whether an opening's pre-queue may hold users: one is ahead
-- (opens_at set, not yet opened) or being placed. Only then is it looked at
-- on the hot path: open_due.lua and place.lua empty it before they mark the
-- queue open, and put_config.lua opens at once a queue whose opening is
-- cleared with users in it.
local function opening(cfg, adm)
  return adm.open_state == 'placing' or ((tonumber(cfg.opens_at) or 0) > 0 and not adm.open_state)
end

-- unplaced is, while an opening is being placed, how many of its pre-queue
-- are still to be placed and the last ticket reserved for them (open_end):
-- they are ahead of everyone who entered after the close, whose positions
-- and the line's length count them; 0 otherwise.
local function unplaced(adm)
  if adm.open_state ~= 'placing' then
    return 0, nil
  end
  return redis.call('ZCARD', K.pre), tonumber(adm.open_end)
end

-- markSeen: when no-shows are skipped (cfg.abandon_ms), a waiting user at
-- position, within the reach of seen marks (every position before the first
-- tick sets one), is seen now. Their instance's batched mark (seen.lua) comes
-- up to a second later, and admission could reach them meanwhile: a user back
-- from a long absence would be skipped though asking.
local function markSeen(cfg, adm, user, position, now)
  if (tonumber(cfg.abandon_ms) or 0) > 0 then
    local reach = tonumber(adm.reach)
    if not reach or position <= reach then
      redis.call('ZADD', K.seen, now, user)
    end
  end
end

-- standing is where the user stands: {1, position, length, ticket} in line
-- (behind the unplaced of an opening when they entered after its close),
-- {3} in the opening's pre-queue, {2, token, expiresAtMs} with a valid
-- token; else nil, and the token they hold whose time is up, if any.
local function standing(cfg, adm, user, now, length)
  local ticket = redis.call('ZSCORE', K.line, user)
  if ticket then
    local n, last = unplaced(adm)
    local position = redis.call('ZRANK', K.line, user) + 1
    if last and tonumber(ticket) > last then
      position = position + n
    end
    return {1, position, length + n, tonumber(ticket)}
  end
  if opening(cfg, adm) and redis.call('ZSCORE', K.pre, user) then
    return {3}
  end
  local token = redis.call('HGET', K.tokens, user)
  local exp = token and tonumber(redis.call('ZSCORE', K.texp, user))
  if exp and exp > now then
    return {2, token, exp}
  end
  return nil, token
end

-- liveToken: when the token presented is the one the user holds and its
-- time is not up, its expiry (ms), now, and the token's digest; else nil.
-- Digests, not the secrets, are compared: the time a string compare takes
-- then says nothing useful about the stored token.
local function liveToken(user, presented)
  local stored = redis.call('HGET', K.tokens, user)
  local digest = stored and redis.sha1hex(stored)
  if not digest or digest ~= redis.sha1hex(presented) then
    return nil
  end
  local now = clock()
  local exp = tonumber(redis.call('ZSCORE', K.texp, user))
  if not exp or exp <= now then
    return nil
  end
  return exp, now, digest
end

-- dropToken deletes the user's token and counts it on counter, or as expired
-- if its time was up, as stats.lua counted it already: counters never go back.
local function dropToken(user, counter, now)
  if (tonumber(redis.call('ZSCORE', K.texp, user)) or now + 1) <= now then
    counter = 'expired'
  end
  redis.call('HDEL', K.tokens, user)
  redis.call('ZREM', K.texp, user)
  redis.call('HINCRBY', K.adm, counter, 1)
end
