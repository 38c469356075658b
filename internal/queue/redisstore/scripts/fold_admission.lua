-- fold_admission: move a queue's admission hash as versions before issue 24
-- kept it ({queue}:adm) into the queue's one hash (keys.go), then delete it:
-- its tick state, opening, adaptive rate and counters carry on where they
-- were. A field already written there by this version (an instance of it
-- ticked first) is kept, the old one dropped.
--
-- KEYS the queue's (the generated text's second line names them), then the
--      old admission hash, last
-- Reply: how many fields the old hash had (0: nothing to fold)
local oldHash = KEYS[#KEYS]
local old = redis.call('HGETALL', oldHash)
for i = 1, #old, 2 do
  redis.call('HSETNX', K.cfg, old[i], old[i + 1])
end
if #old > 0 then
  redis.call('DEL', oldHash)
end
return #old / 2
