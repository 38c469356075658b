-- audit_read: read a page of the audit log (audit_append.lua's), newest
-- first, within a span of time; the caller filters by queue and actor and
-- reads the next page while it wants more, from the last member it read.
-- A page goes on from that member itself (its rank, found in O(log N)),
-- never from an offset: a read costs what it answers however little of the
-- log the filter keeps, and an entry kept meanwhile (newer: above it)
-- neither shifts a page nor is read twice.
--
-- KEYS the log ({:staff}:audit), alone: the script names none of a
--      queue's keys
-- ARGV[1] the span's end (Unix ms, or +inf), ARGV[2] its start (Unix ms,
--      or -inf), ARGV[3] the last member read ("" for the first page),
--      ARGV[4] how many to read
-- Reply: the members, newest first ("<id> <json>")
local log, hi, lo, after, count = KEYS[#KEYS], ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
if after == '' then
  return redis.call('ZRANGE', log, hi, lo, 'BYSCORE', 'REV', 'LIMIT', 0, count)
end
local rank = redis.call('ZREVRANK', log, after)
if not rank then
  -- Trimmed since (older than the retention), and so is all that was
  -- older than it: go on below its time (its id's first part).
  local at = string.match(after, '^(%-?%d+)%-')
  return redis.call('ZRANGE', log, '(' .. at, lo, 'BYSCORE', 'REV', 'LIMIT', 0, count)
end
-- The members after it, newest first, down to the span's start: those at
-- or above it are the first ZCOUNT by rank from the newest.
local last = math.min(rank + count, redis.call('ZCOUNT', log, lo, '+inf') - 1)
if last <= rank then
  return {}
end
return redis.call('ZRANGE', log, rank + 1, last, 'REV')
