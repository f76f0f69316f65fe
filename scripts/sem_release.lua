-- sem_release.lua: give a permit back, checking the owner (and optionally the token).
--
-- KEYS[1] permits key (zset: owner -> expires_at_ms)
-- KEYS[2] holders key (hash: owner -> "token:acquired_at_ms")
-- ARGV[1] owner
-- ARGV[2] token ("" = any token of this owner)
-- ARGV[3] pub/sub channel told about the release ("" = none)
-- ARGV[4] message published on that channel (the permits key)
--
-- Reply:  1 released
--         0 not found (no live permit at all)
--        -1 permits are held, none by this owner (or not under this token)
-- First a write that changes nothing (an empty score range, so nothing
-- is replicated): a read-only replica (a demoted primary a connection
-- still reached during a failover) refuses it, and the call fails with
-- READONLY instead of a refusal read from data that may be stale
-- (docs/safety.md).
redis.call('ZREMRANGEBYSCORE', KEYS[1], '+inf', '-inf')
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now_ms))
for i = 1, #gone do
  redis.call('ZREM', KEYS[1], gone[i])
  redis.call('HDEL', KEYS[2], gone[i])
end
if redis.call('ZCARD', KEYS[1]) == 0 then
  return 0
end
local h = redis.call('HGET', KEYS[2], ARGV[1])
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) or not h then
  return -1
end
if ARGV[2] ~= '' then
  local sep = string.find(h, ':', 1, true)
  if not sep or string.sub(h, 1, sep - 1) ~= ARGV[2] then
    return -1
  end
end
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
if ARGV[3] ~= '' then
  -- A channel with a hash tag is the resource's shard channel (Redis
  -- Cluster >= 7, keyspace.ShardChannel): SPUBLISH reaches only its slot.
  redis.call(string.find(ARGV[3], '{', 1, true) and 'SPUBLISH' or 'PUBLISH', ARGV[3], ARGV[4])
end
return 1
