-- release.lua: end a lease, checking the owner (and optionally the token).
--
-- KEYS[1] lock key
-- KEYS[2] waiters key (acquire.lua): the release is published only while
--         it exists, that is while some acquire waits on the resource
-- KEYS[3] the resource's line (zset, line.lua): the message names the
--         next live ticket in it, the waiter Redis grants next
-- KEYS[4] the tenant's lock index, on a single Redis and Sentinel (as in
--         acquire.lua); the release takes the resource out of it. On
--         Redis Cluster listings and sweeps prune it (docs/operations.md).
-- ARGV[1] owner
-- ARGV[2] token ("" = any token of this owner)
-- ARGV[3] channel told about the release ("" = none), with the lock key
--         and the next live owner in line as message (line_wake). A
--         channel with a hash tag is the resource's shard channel (Redis
--         Cluster >= 7, keyspace.ShardChannel): SPUBLISH.
-- ARGV[4] the resource (the index's member)
--
-- The lease ends by becoming a tombstone: the hash keeps only its token
-- (the resource's fence, docs/keys.md) and the TTL it had. Its lock_delay
-- goes too: a release ends the lease with no delay.
--
-- Reply: >= 1 released: 1 + how long the lease was held, in milliseconds
--         0 not found (no lease, or it has expired)
--        -1 held by someone else, or the token does not match
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- A refusal below writes nothing, so a read-only replica (a demoted
-- primary a connection still reached during a failover) would answer it
-- from data that may lack the lease. So each refusal first runs HDEL of a
-- field no lease has: a write that changes nothing (nothing is
-- replicated), which a replica refuses, and the call fails with READONLY
-- instead of a false refusal (docs/safety.md). Inline, not a function:
-- a Lua closure per call would cost the grants and releases too.
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token', 'expires_at', 'acquired_at')
if not cur[1] or not cur[3] or tonumber(cur[3]) <= now_ms then
  redis.call('HDEL', KEYS[1], 'primary_check')
  return 0
end
if cur[1] ~= ARGV[1] then
  redis.call('HDEL', KEYS[1], 'primary_check')
  return -1
end
if ARGV[2] ~= '' and cur[2] ~= ARGV[2] then
  redis.call('HDEL', KEYS[1], 'primary_check')
  return -1
end
redis.call('HDEL', KEYS[1], 'owner', 'acquired_at', 'expires_at', 'lock_delay')
if KEYS[4] then
  redis.call('ZREM', KEYS[4], ARGV[4])
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  line_wake(ARGV[3], KEYS[1], KEYS[3], KEYS[2], now_ms, 1)
end
return 1 + math.max(now_ms - (tonumber(cur[4] or '') or now_ms), 0)
