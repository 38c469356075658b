-- twoconfigs: config called with two lists
local cfg = config({'rate'})
cfg = config({'batch'})
return cfg.rate
