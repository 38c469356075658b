-- set_stock: what the queue has left to sell (queue.Store.SetStock): the
-- units left of the products it sells, told by the order API after each
-- sale and restock, or by the shop (the admin API, the gateway's
-- X-Waitroom-Command). 0 is sold out: enter.lua refuses newcomers,
-- admission stops (tick.lua reads it for admission.PlanTick) and every pace
-- block carries it, so whoever waits is told and keeps their place. A
-- sale's count (only lower) may arrive after a later sale's: it never
-- raises a known count. Selling out, and a restock after it, is stamped
-- with the time (sold_out_at: queue.Changes), so every instance names the
-- change alike for the shop's events.
--
-- KEYS the queue's (the generated text's second line names them)
-- ARGV[1] the units left, '' for not known; ARGV[2] '1': only lower
-- Reply: {UNKNOWN_QUEUE}, else {STOCK, the units left now ('' not known)}
local units, onlyLower = ARGV[1], ARGV[2] == '1'
local _, adm, refused = config()
if refused then return refused end
local known = tonumber(adm.units_left)
if onlyLower and known and (units == '' or tonumber(units) >= known) then
  return {STOCK, adm.units_left}
end
if units == '' then
  redis.call('HDEL', K.cfg, 'units_left')
else
  redis.call('HSET', K.cfg, 'units_left', units)
end
if (known ~= nil and known <= 0) ~= (units ~= '' and tonumber(units) <= 0) then
  redis.call('HSET', K.cfg, 'sold_out_at', (clock()))
end
return {STOCK, units}
