-- snapshot: the line's head, last ticket, length, its pace and the leavers
-- above the head, in one step, so an instance can answer status polls by
-- arithmetic for a moment (queue.Snapshot). Changes nothing.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] at most this many leavers; one more is read to tell "more"
-- Reply: {UNKNOWN_QUEUE}; an error starting DAMAGED when the config lacks
--        a field this script needs
--        {1, head, last, length, pace..., leavers}
--        head is 0 when no one waits; leavers is their tickets in order,
--        each followed by a comma ("" for none): one string, not a list,
--        as the held polls of every instance read it every tick and a
--        list of thousands costs the client an allocation an item.
local maxLeft = tonumber(ARGV[1])
local cfg, adm, refused = config({'rate', 'batch'})
if refused then return refused end
local length = redis.call('ZCARD', K.line)
local reply = pace({1, 0, tonumber(redis.call('GET', K.seq) or '0'), length}, cfg, adm, clock(), length)
local head = redis.call('ZRANGE', K.line, 0, 0, 'WITHSCORES')
local left = {}
if head[2] then
  reply[2] = tonumber(head[2])
  left = redis.call('ZRANGEBYSCORE', K.left, head[2], '+inf', 'LIMIT', 0, maxLeft + 1)
  left[#left + 1] = ''
end
reply[#reply + 1] = table.concat(left, ',')
return reply
