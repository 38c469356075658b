-- bothtables: one field, named both ways
local cfg, adm = config()
return {cfg.moved, adm.moved}
