-- audit_append: keep an entry of the audit log (issue 56; package staff),
-- numbered by the log's counter, and drop the entries older than the
-- retention. The log is a sorted set by the entries' time, each member its
-- ID, a space and its JSON: the ID (time in Unix ms, a dash, the number,
-- padded) orders the entries of one millisecond as they were kept. Both
-- keys lapse the retention after the last entry, so a log nobody writes
-- to any more goes away by itself.
--
-- KEYS the log ({:staff}:audit) and its counter ({:staff}:audit:n), alone:
--      the script names none of a queue's keys
-- ARGV[1] the entry's time (Unix ms), ARGV[2] its JSON without its ID,
--      ARGV[3] the retention in ms (≥ 1)
-- Reply: the entry's ID
local log, counter = KEYS[#KEYS - 1], KEYS[#KEYS]
local at, entry, keep = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])
local n = redis.call('INCR', counter)
local id = string.format('%d-%012d', at, n)
redis.call('ZADD', log, at, id .. ' ' .. entry)
redis.call('ZREMRANGEBYSCORE', log, '-inf', '(' .. string.format('%d', at - keep))
redis.call('PEXPIRE', log, keep)
redis.call('PEXPIRE', counter, keep)
return id
