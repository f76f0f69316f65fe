-- claim_remove.lua: delete a claim whatever its state (an operator's forced removal).
--
-- KEYS[1] claim key (see claim.lua)
--
-- Reply: 2 a done claim was removed
--        1 a live pending claim was removed
--        0 nothing there (none, abandoned, or the lease expired)
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('HMGET', KEYS[1], 'state', 'expires_at')
if h[1] == 'done' then
  redis.call('DEL', KEYS[1])
  return 2
end
if h[1] == 'pending' and tonumber(h[2]) > now_ms then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
