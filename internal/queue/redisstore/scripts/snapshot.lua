-- snapshot: the line's head, last ticket, length, its pace and the leavers
-- above the head, in one step, so an instance can answer status polls by
-- arithmetic for a moment (queue.Snapshot). Changes nothing.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] at most this many leavers; one more is read to tell "more"
-- Reply: {UNKNOWN_QUEUE}; an error starting DAMAGED when the config lacks
--        a field this script needs
--        {1, head, last, length, pace..., leavers, cleared}
--        head is the lowest ticket waiting, 0 when no one with a ticket
--        waits (lineHead: places cleared from the shadow line have none);
--        leavers is their tickets in order, each followed by a comma (""
--        for none): one string, not a list, as the held polls of every
--        instance read it every tick and a list of thousands costs the
--        client an allocation an item; cleared, alike, the ticket each
--        cleared place stands just behind (its score less 0.5), ascending.
local maxLeft = tonumber(ARGV[1])
local cfg, adm, refused = config({'rate', 'batch'})
if refused then return refused end
local length = redis.call('ZCARD', K.line)
local reply = pace({1, 0, tonumber(redis.call('GET', K.seq) or '0'), length}, cfg, adm, clock(), everyone(adm, length))
local head, nCleared = lineHead()
local left, cleared = {}, {}
if head then
  reply[2] = tonumber(head)
  left = redis.call('ZRANGEBYSCORE', K.left, head, '+inf', 'LIMIT', 0, maxLeft + 1)
  left[#left + 1] = ''
end
if nCleared > 0 then
  local places = redis.call('ZRANGE', K.cleared, 0, -1, 'WITHSCORES')
  for i = 2, #places, 2 do cleared[#cleared + 1] = math.floor(tonumber(places[i])) end
  cleared[#cleared + 1] = ''
end
reply[#reply + 1] = table.concat(left, ',')
reply[#reply + 1] = table.concat(cleared, ',')
return reply
