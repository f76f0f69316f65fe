-- claim_status.lua: read a claim (writes nothing).
--
-- KEYS[1] claim key (see claim.lua)
--
-- Reply: {1, owner, token, claimed_at_ms, expires_at_ms}  pending, lease live
--        {2, token, completed_at_ms, result}             done
--        {0}                                             nothing (none, abandoned, or the lease expired)
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('HMGET', KEYS[1], 'state', 'owner', 'token', 'claimed_at', 'expires_at', 'completed_at', 'result')
if h[1] == 'done' then
  return {2, h[3], h[6], h[7]}
end
if h[1] == 'pending' and tonumber(h[5]) > now_ms then
  return {1, h[2], h[3], h[4], h[5]}
end
return {0}
