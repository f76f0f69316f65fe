-- release_set.lua: end the caller's leases on a set of resources, each as
-- release.lua would, atomically (docs/lock-sets.md).
--
-- KEYS[3i-2] lock key of member i, i = 1..n
-- KEYS[3i-1] waiters key of member i (a release publishes only while it
--            exists, as in release.lua)
-- KEYS[3i]   line of member i (release.lua's KEYS[3])
-- KEYS[3n+1] the tenant's lock index, on a single Redis and Sentinel
-- ARGV[1] owner
-- ARGV[2..1+n]   the resources (the index's members)
-- ARGV[2+n..1+2n] each member's token ('' = any token of this owner)
-- ARGV[2+2n..1+3n] each member's release channel ('' = none; a hash tag
--         makes it a shard channel: SPUBLISH), as release.lua's ARGV[3]
--
-- Reply: per member, in KEYS order, release.lua's number: >= 1 released
--        (1 + how long it was held, ms), 0 not found or expired, -1 held
--        by someone else or under another token.
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = math.floor(#KEYS / 3)
local out = {}
for i = 1, n do
  local key = KEYS[3 * i - 2]
  local cur = redis.call('HMGET', key, 'owner', 'token', 'expires_at', 'acquired_at')
  local tok = ARGV[1 + n + i]
  if not cur[1] or not cur[3] or tonumber(cur[3]) <= now_ms then
    out[i] = 0
  elseif cur[1] ~= ARGV[1] or (tok ~= '' and cur[2] ~= tok) then
    out[i] = -1
  else
    redis.call('HDEL', key, 'owner', 'acquired_at', 'expires_at', 'lock_delay')
    if KEYS[3 * n + 1] then
      redis.call('ZREM', KEYS[3 * n + 1], ARGV[1 + i])
    end
    if redis.call('EXISTS', KEYS[3 * i - 1]) == 1 then
      line_wake(ARGV[1 + 2 * n + i], key, KEYS[3 * i], KEYS[3 * i - 1], now_ms, 1)
    end
    out[i] = 1 + math.max(now_ms - (tonumber(cur[4] or '') or now_ms), 0)
  end
end
return out
