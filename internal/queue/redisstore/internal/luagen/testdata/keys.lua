-- keys: K.name is KEYS[i], in the order of the keys given (line before
-- seq), whatever order the script names them in; K.line in a comment and
-- 'K.line' in a string stay.
local user = ARGV[1]
local ticket = redis.call('INCR', K.seq) -- K.seq again, in a comment
redis.call('ZADD', K.line, ticket, user)
redis.call('SET', KEYS[#KEYS], 'K.line') -- the caller's key after the queue's
return WAITING
