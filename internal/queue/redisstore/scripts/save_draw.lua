-- save_draw: keep the record of a draw (queue.Store SaveDraw) under the
-- opening's lease, and mark its commitment drawn in the ledger, in one
-- step. The first record kept for a commitment is the one: a later call
-- (an instance that took the lease over and drew again) is answered it,
-- unchanged, so every instance places the same order. The record is kept
-- as it was given (never decoded here: 10,000 participants are ~1 MB).
-- The commitment must be pending, of this life of the queue (cfg.epoch)
-- and to the opening being placed (open_at; an older version kept none:
-- opens_at), as memstore's SaveDraw holds.
--
-- KEYS the queue's (the generated text's second line names them): cfg's
--      epoch, opens_at, open_state, open_owner, open_at; draws, the
--      ledger; drawn, commitment → record
-- ARGV[1] owner, ARGV[2] the commitment (hex), ARGV[3] the record's JSON
--         (draw.Record)
-- Reply: {NOT_OWNER} the caller does not hold the opening's lease (none
--        does: an unknown queue's)
--        {NO_COMMITMENT} the commitment is not pending in the ledger for
--        this opening and life of the queue
--        {DRAWN} the record given is kept now
--        {DRAWN, json} the record kept before for the commitment (only
--        then is a record sent back: it is megabytes)
local owner = ARGV[1]
local commitment = ARGV[2]
local record = ARGV[3]
local cfg, adm = config()
if adm.open_state ~= 'placing' or adm.open_owner ~= owner then
  return {NOT_OWNER}
end
local kept = redis.call('HGET', K.drawn, commitment)
if kept then
  return {DRAWN, kept}
end
local ledger = redis.call('LRANGE', K.draws, 0, -1)
for i = #ledger, 1, -1 do
  local c = cjson.decode(ledger[i])
  if c.commitment == commitment then
    local opensAt = tonumber(adm.open_at) or tonumber(cfg.opens_at)
    if c.state ~= 'pending' or epochOf(ledger[i]) ~= cfg.epoch or c.opensAtMs ~= opensAt then
      return {NO_COMMITMENT}
    end
    c.state = 'drawn'
    redis.call('LSET', K.draws, i - 1, storedCommitment(c, epochOf(ledger[i])))
    redis.call('HSET', K.drawn, commitment, record)
    return {DRAWN}
  end
end
return {NO_COMMITMENT}
