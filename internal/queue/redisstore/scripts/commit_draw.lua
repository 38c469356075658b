-- commit_draw: keep a draw's commitment to the queue's opening (queue.Store
-- CommitDraw), in the ledger kept apart from the queue (K.draws: DeleteQueue
-- leaves it). The opening is read here, in the same step: there must be one
-- at the commitment's instant (cfg.opens_at, or open_at while one is
-- placed), not yet opened, and not drawn
-- in this life of the queue (cfg.epoch). The newest commitment, when it is
-- pending for the same opening, beacon round and life, is the one: it is
-- answered and the new one dropped (every instance commits as soon as it
-- sees the opening; one is kept). Otherwise a pending newest one is
-- withdrawn (the opening moved, the beacon changed, or the queue was made
-- again) and the new one kept, stamped by Redis TIME.
--
-- KEYS the queue's (the generated text's second line names them): cfg's
--      opens_at, open_state, open_at, epoch; draws, the ledger (oldest first)
-- ARGV[1] the commitment, draw.Committed.MarshalStored's JSON; its state,
--         madeAtMs and epoch are set here
-- Reply: {UNKNOWN_QUEUE}
--        {NO_COMMITMENT} no such opening to commit to: nothing written
--        {COMMITTED, json} the commitment kept (the one given, or the one
--        kept before), as stored
local given = ARGV[1]
local cfg, adm, refused = config()
if refused then return refused end
local c = cjson.decode(given)
-- While an opening is placed, it is the one closed (open_at, open_due.lua),
-- whatever opens_at says since.
local opensAt = adm.open_state == 'placing' and tonumber(adm.open_at) or tonumber(cfg.opens_at) or 0
if opensAt == 0 or opensAt ~= c.opensAtMs or adm.open_state == 'open' then
  return {NO_COMMITMENT}
end
local now = clock()
local newest = redis.call('LINDEX', K.draws, -1)
if newest then
  local n = cjson.decode(newest)
  local same = epochOf(newest) == cfg.epoch and n.opensAtMs == c.opensAtMs
  if same and n.state == 'drawn' then
    return {NO_COMMITMENT}
  end
  if n.state == 'pending' then
    if same and n.beaconKey == c.beaconKey then
      return {COMMITTED, newest}
    end
    n.state, n.withdrawnAtMs = 'withdrawn', now
    redis.call('LSET', K.draws, -1, storedCommitment(n, epochOf(newest)))
  end
end
c.state, c.madeAtMs, c.withdrawnAtMs = 'pending', now, nil
local kept = storedCommitment(c, cfg.epoch)
redis.call('RPUSH', K.draws, kept)
return {COMMITTED, kept}
