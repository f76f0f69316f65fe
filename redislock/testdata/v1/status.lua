-- status.lua: read a live lease.
--
-- KEYS[1] lock key
--
-- Reply: {1, token, acquired_at_ms, expires_at_ms, owner}  held
--        {0}                                              none, or expired
-- A lease past its expires_at is never shown, even before Redis reaps it.
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token', 'acquired_at', 'expires_at')
if not cur[1] or not cur[4] or tonumber(cur[4]) <= now_ms then
  return {0}
end
return {1, cur[2], cur[3], cur[4], cur[1]}
