-- A prelude of the generator's golden tests: its opening comment is
-- dropped.

-- Reply kinds.
local UNKNOWN_QUEUE, WAITING = -1, 1

-- Kinds no test script uses.
local UNUSED_A, UNUSED_B = 7, 8

-- clock is Redis TIME in ms.
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- unused is named by no script: in the library all the same.
local function unused()
  return K.seq
end

-- position has a blank line inside: a declaration ends where the next
-- one's comment starts, not at a blank line.
local function position(user)
  local rank = redis.call('ZRANK', K.line, user)

  return rank and rank + 1
end
-- open (with cfg.opens_at in a comment, left as it is) uses position.
local function open(cfg, adm, user)
  return (tonumber(cfg.opens_at) or 0) == 0 and adm.state ~= 'closed' and position(user)
end
