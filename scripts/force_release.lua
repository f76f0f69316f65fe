-- force_release.lua: an operator ends whoever's lease on one resource.
--
-- KEYS[1] lock key
-- KEYS[2] fence key
-- KEYS[3] waiters key (release.lua: publish only while it exists)
-- KEYS[4] forced key (string: the token force-released, for watchers)
-- ARGV[1] pub/sub channel told about the release ("" = none)
-- ARGV[2] message published on that channel (the lock key)
-- ARGV[3] fence retention in milliseconds
-- ARGV[4] '1': publish only while KEYS[3] exists (Options.PublishOnlyToWaiters)
-- ARGV[5] how long KEYS[4] lives, in milliseconds
-- ARGV[6] the resource
-- ARGV[7] '1': KEYS[5] is the tenant's lock index (not on Redis Cluster),
--         the resource is taken out of it
-- KEYS[5] (or KEYS[6] after the index) the webhook outbox (stream),
--         optional (webhooks on, not on Redis Cluster): the force-release
--         event is written in this same script, only when a lease ended,
--         with ARGV[8] event id, ARGV[9] tenant, ARGV[10] operator,
--         ARGV[11] reason, ARGV[12] outbox length bound (XADD MAXLEN ~)
--
-- Reply: {1, token, acquired_at_ms, expires_at_ms, owner, now_ms}  the lease that ended
--        {0}                                                      no live lease
--
-- The token is burnt: the lock hash is left as a tombstone with only the
-- token (release.lua), and the token stays for at least the fence
-- retention, so the next grant gets a larger token, and the former
-- holder's renew and release find no lease (404). A lease of the one-key
-- layout lives to expires_at + retention already; a two-key lease's hash
-- lives only to expires_at, so its fence key keeps the token instead.
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token', 'acquired_at', 'expires_at')
if not cur[1] or not cur[4] or tonumber(cur[4]) <= now_ms then
  return {0}
end
redis.call('HDEL', KEYS[1], 'owner', 'acquired_at', 'expires_at')
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[3]) then
  local last = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
  if last < tonumber(cur[2]) then
    redis.call('SET', KEYS[2], cur[2], 'PX', ARGV[3])
  elseif redis.call('PTTL', KEYS[2]) < tonumber(ARGV[3]) then
    redis.call('PEXPIRE', KEYS[2], ARGV[3])
  end
end
redis.call('SET', KEYS[4], cur[2], 'PX', ARGV[5])
local outbox = KEYS[5]
if ARGV[7] == '1' then
  redis.call('ZREM', KEYS[5], ARGV[6])
  outbox = KEYS[6]
end
if outbox then
  redis.call('XADD', outbox, 'MAXLEN', '~', ARGV[12], '*', 'id', ARGV[8], 'type', 'force-release',
    'tenant', ARGV[9], 'resource', ARGV[6], 'at', string.format('%.0f', now_ms), 'actor', ARGV[10],
    'reason', ARGV[11])
end
if ARGV[1] ~= '' and (ARGV[4] ~= '1' or redis.call('EXISTS', KEYS[3]) == 1) then
  -- A channel with a hash tag is the resource's shard channel (Redis
  -- Cluster >= 7, keyspace.ShardChannel): SPUBLISH reaches only its slot.
  redis.call(string.find(ARGV[1], '{', 1, true) and 'SPUBLISH' or 'PUBLISH', ARGV[1], ARGV[2])
end
return {1, cur[2], cur[3], cur[4], cur[1], string.format('%.0f', now_ms)}
