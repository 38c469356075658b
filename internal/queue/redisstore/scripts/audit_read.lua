-- audit_read: read a page of the audit log (audit_append.lua's), newest
-- first, within a span of time; the caller filters by queue and actor and
-- reads the next page while it wants more.
--
-- KEYS the log ({:staff}:audit), alone: the script names none of a
--      queue's keys
-- ARGV[1] the span's end (Unix ms, or +inf), ARGV[2] its start (Unix ms,
--      or -inf), ARGV[3] how many to skip, ARGV[4] how many to read
-- Reply: the members, newest first ("<id> <json>")
return redis.call('ZRANGE', KEYS[#KEYS], ARGV[1], ARGV[2], 'BYSCORE', 'REV', 'LIMIT', ARGV[3], ARGV[4])
