-- sem_release.lua: give a permit back, checking the owner (and optionally the token).
--
-- KEYS[1] permits key (zset: owner -> expires_at_ms)
-- KEYS[2] holders key (hash: owner -> "token:acquired_at_ms")
-- KEYS[3] limit key (sem_acquire.lua)
-- KEYS[4] waiters key, KEYS[5] line (line.lua): the release is published
--         only while KEYS[4] exists, naming the live tickets at the front
--         of the line that the free slots go to (line_wake)
-- ARGV[1] owner
-- ARGV[2] token ("" = any token of this owner)
-- ARGV[3] pub/sub channel told about the release ("" = none; a channel
--         with a hash tag is the name's shard channel: SPUBLISH)
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
if redis.call('EXISTS', KEYS[4]) == 1 then
  local free = (tonumber(redis.call('GET', KEYS[3]) or '') or 1) - redis.call('ZCARD', KEYS[1])
  line_wake(ARGV[3], KEYS[1], KEYS[5], KEYS[4], now_ms, math.max(free, 1))
end
return 1
