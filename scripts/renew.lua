-- renew.lua: move the expiry of a live lease; the token is unchanged.
--
-- KEYS[1] lock key
-- ARGV[1] owner
-- ARGV[2] ttl in milliseconds (integer > 0)
-- ARGV[3] fence retention in milliseconds: the hash, also the fence,
--         lives to the new expires_at + max(retention, lock_delay)
--         (acquire.lua); the lease keeps its lock_delay
-- ARGV[4] token ("" = any token of this owner)
--
-- Reply: {1, token, acquired_at_ms, expires_at_ms, owner}  renewed
--        {0}                                              not found or expired
--        {-1}                                             someone else's lease, or token mismatch
-- An expired lease is never renewed: it must be acquired again (new token).
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- A refusal below writes nothing, so a read-only replica (a demoted
-- primary a connection still reached during a failover) would answer it
-- from data that may lack the lease. So each refusal first runs HDEL of a
-- field no lease has: a write that changes nothing (nothing is
-- replicated), which a replica refuses, and the call fails with READONLY
-- instead of a false refusal (docs/safety.md). Inline, not a function:
-- a Lua closure per call would cost the grants and releases too.
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token', 'acquired_at', 'expires_at', 'lock_delay')
if not cur[1] or not cur[4] or tonumber(cur[4]) <= now_ms then
  redis.call('HDEL', KEYS[1], 'primary_check')
  return {0}
end
if cur[1] ~= ARGV[1] then
  redis.call('HDEL', KEYS[1], 'primary_check')
  return {-1}
end
if ARGV[4] ~= '' and cur[2] ~= ARGV[4] then
  redis.call('HDEL', KEYS[1], 'primary_check')
  return {-1}
end
local exp = now_ms + tonumber(ARGV[2])
local exps = string.format('%.0f', exp)
redis.call('HSET', KEYS[1], 'expires_at', exps)
redis.call('PEXPIREAT', KEYS[1], exp + math.max(tonumber(ARGV[3]), tonumber(cur[5] or '0')))
return {1, cur[2], cur[3], exps, cur[1]}
