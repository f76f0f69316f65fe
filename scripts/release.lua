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
-- [locks index] ARGV[5] = 'hold': a release answers 2 + the hold time in
--         milliseconds (now - acquired_at, >= 2) instead of 1, for metrics.
--         ARGV[6] = 'index': the LAST key is the tenant's lock index and
--         ARGV[7] the resource, which the release takes out of it (not on
--         Redis Cluster; docs/operations.md).
--
-- The lease ends by becoming a tombstone: the hash keeps only its token
-- (the fence of the one-key layout, docs/keys.md) and the TTL it had. The
-- two-key layout's hash lives only to expires_at and its fence key holds
-- the token too. Every script reads a hash without owner or expires_at as
-- no lease, as every earlier version did.
--
-- Reply:  1 released
--         0 not found (no lease, or it has expired)
--        -1 held by someone else, or the token does not match
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token', 'expires_at', 'acquired_at')
if not cur[1] or not cur[3] or tonumber(cur[3]) <= now_ms then
  return 0
end
if cur[1] ~= ARGV[1] then
  return -1
end
if ARGV[2] ~= '' and cur[2] ~= ARGV[2] then
  return -1
end
-- [locks index] which keys are which (block kept apart for the hot path)
local waiters = KEYS[2]
if ARGV[6] == 'index' then
  redis.call('ZREM', KEYS[#KEYS], ARGV[7])
  if #KEYS == 2 then
    waiters = nil
  end
end
-- [/locks index]
redis.call('HDEL', KEYS[1], 'owner', 'acquired_at', 'expires_at')
if ARGV[3] ~= '' and (not waiters or redis.call('EXISTS', waiters) == 1) then
  -- A channel with a hash tag is the resource's shard channel (Redis
  -- Cluster >= 7, keyspace.ShardChannel): SPUBLISH reaches only its slot.
  redis.call(string.find(ARGV[3], '{', 1, true) and 'SPUBLISH' or 'PUBLISH', ARGV[3], ARGV[4])
end
-- [locks index] the hold time
if ARGV[5] == 'hold' and cur[4] then
  return 2 + math.max(now_ms - tonumber(cur[4]), 0)
end
-- [/locks index]
return 1
