-- release.lua: end a lease, checking the owner (and optionally the token).
--
-- KEYS[1] lock key
-- KEYS[2] waiters key (acquire.lua, interest.lua), optional: when given,
--         the release is published only while the key exists (someone
--         waits); without it, always
-- ARGV[1] owner
-- ARGV[2] token ("" = any token of this owner)
-- ARGV[3] pub/sub channel told about the release ("" = none)
-- ARGV[4] message published on that channel (identifies the resource)
--
-- Reply:  1 released
--         0 not found (no lease, or it has expired)
--        -1 held by someone else, or the token does not match
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token', 'expires_at')
if not cur[1] or not cur[3] or tonumber(cur[3]) <= now_ms then
  return 0
end
if cur[1] ~= ARGV[1] then
  return -1
end
if ARGV[2] ~= '' and cur[2] ~= ARGV[2] then
  return -1
end
redis.call('DEL', KEYS[1])
if ARGV[3] ~= '' and (not KEYS[2] or redis.call('EXISTS', KEYS[2]) == 1) then
  redis.call('PUBLISH', ARGV[3], ARGV[4])
end
return 1
