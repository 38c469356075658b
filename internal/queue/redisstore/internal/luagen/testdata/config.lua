-- config: config(need, may) becomes config() and its reader: one HMGET of
-- rate, epoch and each field named (here and in the prelude functions
-- taken), cfg.x and adm.x written as their places in it (after .. too),
-- but not x.cfg.rate, a field of another table, nor a string's "cfg.rate".
local user = ARGV[1]
local cfg, adm, refused = config({'capacity'}, {'opens_at'})
if refused then return refused end
if adm.moved then
  adm.moved = clock()
end
return {open(cfg, adm, user), tonumber(cfg.capacity), "cfg.rate", 'at '..cfg.capacity, x.cfg.rate}
