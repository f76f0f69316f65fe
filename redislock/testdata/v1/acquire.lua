-- acquire.lua: take a lease on one resource, atomically.
--
-- KEYS[1] lock key   (hash: owner, token, acquired_at, expires_at; PEXPIREAT = expires_at)
-- KEYS[2] fence key  (string: the last fencing token handed out for this resource)
-- ARGV[1] owner
-- ARGV[2] ttl in milliseconds (integer > 0)
-- ARGV[3] fence retention in milliseconds: how long the fence key outlives the lease
-- KEYS[3] waiters key (hash: waiter id -> 1), optional: given by a waiting
--         acquire, which is registered there when the lease is someone
--         else's, in the same atomic step as the check, so that a later
--         release publishes (release.lua); absent for a plain acquire
-- ARGV[4] the waiter's id (with KEYS[3]); a grant removes it from there
-- ARGV[5] milliseconds the waiters key must live at least (with KEYS[3])
-- [locks index] ARGV[6] = 'index': the LAST key is the tenant's lock index
--         (a zset scored 0, keyspace.LockIndex) and ARGV[7] the resource;
--         a new grant adds the resource there. Given only where one
--         script may touch two slots' keys (not on Redis Cluster; see
--         docs/operations.md). Without a waiter, ARGV[4..5] are '' and '0'.
--
-- Reply: {1, token, acquired_at_ms, expires_at_ms, owner, now_ms}  the caller holds the lease
--        {0, token, acquired_at_ms, expires_at_ms, owner, now_ms}  someone else holds it
-- Tokens and times are returned as decimal strings, never as Lua numbers, so
-- that no precision is lost on the way to Go.
--
-- Time comes from the Redis server (TIME), so every gateway agrees on expiry.
-- A lease whose expires_at has passed is treated as free even if Redis has
-- not yet reaped the key.
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local owner = ARGV[1]
local ttl = tonumber(ARGV[2])
local retention = tonumber(ARGV[3])
local exp = now_ms + ttl

-- [locks index] which keys are which (block kept apart for the hot path)
local waiters = KEYS[3]
local index = nil
if ARGV[6] == 'index' then
  index = KEYS[#KEYS]
  if #KEYS == 3 then
    waiters = nil
  end
end
-- [/locks index]

local cur = redis.call('HMGET', KEYS[1], 'owner', 'token', 'acquired_at', 'expires_at')
if cur[1] and cur[4] and tonumber(cur[4]) > now_ms then
  if cur[1] ~= owner then
    if waiters then
      redis.call('HSET', waiters, ARGV[4], 1)
      if redis.call('PTTL', waiters) < tonumber(ARGV[5]) then
        redis.call('PEXPIRE', waiters, ARGV[5])
      end
    end
    return {0, cur[2], cur[3], cur[4], cur[1], string.format('%.0f', now_ms)}
  end
  -- Same owner: idempotent re-acquire keeps the token and moves the expiry.
  if waiters then
    redis.call('HDEL', waiters, ARGV[4])
  end
  redis.call('HSET', KEYS[1], 'expires_at', string.format('%.0f', exp))
  redis.call('PEXPIREAT', KEYS[1], exp)
  redis.call('PEXPIREAT', KEYS[2], exp + retention)
  return {1, cur[2], cur[3], string.format('%.0f', exp), owner, string.format('%.0f', now_ms)}
end

-- Free or expired: a new holder gets a new token. The token never falls
-- below the server's clock in microseconds, so it keeps increasing even if
-- the fence key was lost (evicted, restart without persistence).
-- One command in the usual case: write the clock's token and read the last
-- one in the same SET ... GET; only when the last token is not below the
-- clock (several holders within one microsecond, or the clock stepped
-- back) is it written again as last + 1.
local tok = string.format('%.0f', now_us)
local prev = redis.call('SET', KEYS[2], tok, 'PXAT', exp + retention, 'GET')
local last = tonumber(prev or '0') or 0
if last + 1 > now_us then
  tok = string.format('%.0f', last + 1)
  redis.call('SET', KEYS[2], tok, 'PXAT', exp + retention)
end
local acq = string.format('%.0f', now_ms)
local exps = string.format('%.0f', exp)
-- No DEL first: the hash only ever holds these four fields (this script's,
-- and every earlier version's), so HSET replaces the whole lease.
redis.call('HSET', KEYS[1], 'owner', owner, 'token', tok, 'acquired_at', acq, 'expires_at', exps)
redis.call('PEXPIREAT', KEYS[1], exp)
if waiters then
  redis.call('HDEL', waiters, ARGV[4])
end
-- [locks index] a new holder enters the index (one command, no round trip)
if index then
  redis.call('ZADD', index, 0, ARGV[7])
end
-- [/locks index]
return {1, tok, acq, exps, owner, acq}
