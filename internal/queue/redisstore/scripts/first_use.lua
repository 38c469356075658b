-- first_use: record that a one-time thing of a queue (a solved challenge,
-- by its nonce) has been used, and say whether this was its first use. SET
-- NX decides it in one step, so of any number of concurrent uses exactly
-- one is first; the marker lapses with the thing itself. The marker holds
-- the call's own id, so the same call run again (the Redis client re-sends
-- a command whose reply was late) is still the first use, not a second.
--
-- KEYS the marker ({q}:used:<key>), alone: the script names none of the
--      queue's keys
-- ARGV[1] ttl in ms (≥ 1), ARGV[2] the call's id
-- Reply: 1 first use (now recorded), 0 used before
local marker = KEYS[#KEYS]
local ttlMs = ARGV[1]
local call = ARGV[2]
if redis.call('SET', marker, call, 'NX', 'PX', ttlMs) then
  return 1
end
if redis.call('GET', marker) == call then
  return 1
end
return 0
