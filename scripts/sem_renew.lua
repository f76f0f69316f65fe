-- sem_renew.lua: move the expiry of the owner's permit to now + ttl.
--
-- KEYS[1] permits key, KEYS[2] holders key, KEYS[3] limit key, KEYS[4] fence key
-- ARGV[1] owner
-- ARGV[2] ttl in milliseconds (integer > 0)
-- ARGV[3] fence retention in milliseconds
--
-- Reply: {1, token, acquired_at_ms, expires_at_ms}  renewed
--        {0}                                        no live permit at all
--        {-1}                                       permits are held, none by this owner
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
  return {0}
end
local h = redis.call('HGET', KEYS[2], ARGV[1])
local sep = h and string.find(h, ':', 1, true)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) or not sep then
  return {-1}
end
local exp = now_ms + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], exp, ARGV[1])
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
local until_ms = tonumber(last[2])
redis.call('PEXPIREAT', KEYS[1], until_ms)
redis.call('PEXPIREAT', KEYS[2], until_ms)
redis.call('PEXPIREAT', KEYS[3], until_ms)
redis.call('PEXPIREAT', KEYS[4], until_ms + tonumber(ARGV[3]))
return {1, string.sub(h, 1, sep - 1), string.sub(h, sep + 1), string.format('%.0f', exp)}
