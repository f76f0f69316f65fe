-- force_release.lua: an operator ends whoever's lease on one resource.
--
-- KEYS[1] lock key
-- KEYS[2] waiters key (release.lua: publish only while it exists)
-- KEYS[3] forced key (string: the token force-released, for watchers)
-- KEYS[4] the resource's line (release.lua's KEYS[3])
-- KEYS[5] the tenant's lock index, on a single Redis and Sentinel
--         (acquire.lua); the resource is taken out of it
-- KEYS[6] the webhook outbox (stream), with webhooks on a single Redis
--         and Sentinel: the force-release event is written in this same
--         script, only when a lease ended. On Redis Cluster neither is
--         given: the gateway writes the event right after the script.
-- ARGV[1] channel told about the release, as release.lua's ARGV[3]
-- ARGV[2] how long KEYS[3] lives, in milliseconds
-- ARGV[3] the resource
-- ARGV[4] event id, ARGV[5] tenant, ARGV[6] operator, ARGV[7] reason,
-- ARGV[8] outbox length bound (XADD MAXLEN ~): the event (with KEYS[6])
--
-- Reply: {1, token, acquired_at_ms, expires_at_ms, owner, now_ms}  the lease that ended
--        {0}                                                      no live lease
--
-- The token is burnt: the lock hash is left as a tombstone with only the
-- token (release.lua), which lives to expires_at + retention, so the next
-- grant gets a larger token, and the former holder's renew and release
-- find no lease (404). Its lock_delay goes too: a forced release ends the
-- lease with no delay.
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token', 'acquired_at', 'expires_at')
if not cur[1] or not cur[4] or tonumber(cur[4]) <= now_ms then
  return {0}
end
redis.call('HDEL', KEYS[1], 'owner', 'acquired_at', 'expires_at', 'lock_delay')
redis.call('SET', KEYS[3], cur[2], 'PX', ARGV[2])
if KEYS[5] then
  redis.call('ZREM', KEYS[5], ARGV[3])
end
if KEYS[6] then
  redis.call('XADD', KEYS[6], 'MAXLEN', '~', ARGV[8], '*', 'id', ARGV[4], 'type', 'force-release',
    'tenant', ARGV[5], 'resource', ARGV[3], 'at', string.format('%.0f', now_ms), 'actor', ARGV[6],
    'reason', ARGV[7])
end
if redis.call('EXISTS', KEYS[2]) == 1 then
  line_wake(ARGV[1], KEYS[1], KEYS[4], KEYS[2], now_ms, 1)
end
return {1, cur[2], cur[3], cur[4], cur[1], string.format('%.0f', now_ms)}
