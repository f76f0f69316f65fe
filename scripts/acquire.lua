-- acquire.lua: take a lease on one resource, atomically.
--
-- KEYS[1] lock key (hash: owner, token, acquired_at, expires_at, and
--         lock_delay when the lease has one), also the resource's fence:
--         it lives to expires_at + max(retention, lock_delay), and a
--         release leaves a tombstone holding only the token (docs/keys.md)
-- KEYS[2] waiters key (hash: 'q:' .. owner -> its ticket's deadline in
--         ms; line.lua), KEYS[3] the resource's line (zset, line.lua)
-- KEYS[4] the tenant's lock index (zset), on a single Redis and Sentinel;
--         on Redis Cluster, where it lives in another slot, the gateway
--         adds a new grant in a second step (index_add.lua) and passes
--         three keys (docs/keys.md, "Operator tools")
-- ARGV[1] owner
-- ARGV[2] ttl in milliseconds (integer > 0)
-- ARGV[3] fence retention in milliseconds
-- ARGV[4] the lease of the caller's ticket in milliseconds, 0 for an
--         acquire that does not wait. A waiting acquire's try that is
--         refused takes (or keeps, and renews) its place in line in this
--         same step, so its gateway is woken by a later release
--         (release.lua publishes while KEYS[2] exists); a grant takes it
--         out. An acquire that does not wait takes no place.
-- ARGV[5] the resource (the index's member)
-- ARGV[6] lock delay in milliseconds (integer >= 0): when this lease ends by
--         EXPIRY, no other owner is granted the resource until that long
--         after expires_at (docs/fencing.md, "Lock delay"). Stored as the
--         field lock_delay only when above 0; a grant without one removes
--         the field, so a lease without a delay keeps its four fields.
-- ARGV[7] the resource's release channel ('' = none, release.lua's
--         ARGV[3]): a waiter already in line whose try finds the resource
--         free with others ahead (woken at an expiry, or by its renewal)
--         wakes the first of them (line_wake), wherever it waits.
--
-- Reply: one string, '<flag> <token> <acquired_at_ms> <expires_at_ms> <now_ms> <owner>'
--        flag 1: the caller holds a new lease; 3: the caller held the
--        lease already and it was renewed (token and acquired_at kept);
--        0: someone else holds it.
--        or '2 <token> <acquired_at_ms> <expires_at_ms> <now_ms> <free_at_ms> <owner>'
--        flag 2: the last lease (token .. expires_at, owner) has expired
--        but is in its lock delay until free_at_ms: refused as contended.
--        or '4 0 0 0 <now_ms> <free_at_ms> ' (no owner)
--        flag 4: the resource is free but others stand ahead in its line
--        (no grant to a non-holder unless the line is empty or the caller
--        stands first); free_at_ms is the soonest deadline of their
--        tickets (when, if their gateway died, the first of them leaves).
-- The owner comes last, so it may hold any byte (spaces too). Numbers are
-- decimal strings, never Lua numbers, so no precision is lost.
--
-- "Held" means expires_at > now (the Redis clock, TIME), never "the key
-- exists": a lease past its expires_at is free even before Redis reaps
-- the key, and a tombstone has no expires_at.
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local owner = ARGV[1]
local exp = now_ms + tonumber(ARGV[2])
local keep = exp + tonumber(ARGV[3])
local nows = string.format('%.0f', now_ms)
local lease = tonumber(ARGV[4])
local waiter = lease > 0
local delay = tonumber(ARGV[6])
if exp + delay > keep then
  keep = exp + delay
end

-- register puts a waiting acquire in line (or renews its place). Every
-- refusal runs it, and it always writes: a refusal is read from data a
-- read-only replica (a demoted primary a connection still reached during
-- a failover) may hold stale, so it must fail there with READONLY rather
-- than answer "held" (docs/safety.md). Without a waiter that write is an
-- HDEL of a field no lease has, which changes nothing and is not
-- replicated (proclaim.lua, release.lua).
local function register()
  if waiter then
    line_join(KEYS[3], KEYS[2], owner, now_us, now_ms, lease)
  else
    redis.call('HDEL', KEYS[1], 'primary_check')
  end
end

local cur = redis.call('HMGET', KEYS[1], 'owner', 'token', 'acquired_at', 'expires_at', 'lock_delay')
if cur[1] and cur[4] and tonumber(cur[4]) > now_ms then
  if cur[1] ~= owner then
    register()
    return '0 ' .. cur[2] .. ' ' .. cur[3] .. ' ' .. cur[4] .. ' ' .. nows .. ' ' .. cur[1]
  end
  -- Same owner: idempotent re-acquire keeps the token and moves the expiry
  -- (and takes this request's lock delay).
  if waiter then
    line_leave(KEYS[3], KEYS[2], owner)
  end
  local exps = string.format('%.0f', exp)
  if delay > 0 then
    redis.call('HSET', KEYS[1], 'expires_at', exps, 'lock_delay', ARGV[6])
  else
    redis.call('HSET', KEYS[1], 'expires_at', exps)
    if cur[5] then
      redis.call('HDEL', KEYS[1], 'lock_delay')
    end
  end
  redis.call('PEXPIREAT', KEYS[1], keep)
  return '3 ' .. cur[2] .. ' ' .. cur[3] .. ' ' .. exps .. ' ' .. nows .. ' ' .. owner
end

-- Expired by time (a release or force-release removes owner and
-- lock_delay) and still in its lock delay: refused to any other owner.
if cur[1] and cur[4] and cur[5] and cur[1] ~= owner then
  local free_at = tonumber(cur[4]) + tonumber(cur[5])
  if free_at > now_ms then
    register()
    return '2 ' .. cur[2] .. ' ' .. cur[3] .. ' ' .. cur[4] .. ' ' .. nows .. ' ' ..
      string.format('%.0f', free_at) .. ' ' .. cur[1]
  end
end

-- Free or expired: the line decides. With nobody in line this costs one
-- EXISTS; otherwise only the first in line may take it (dead tickets at
-- the front are removed on the way).
if redis.call('EXISTS', KEYS[3]) == 1 then
  local ahead, soonest = line_ahead(KEYS[3], KEYS[2], owner, now_ms, 1)
  if ahead > 0 then
    if waiter and redis.call('ZSCORE', KEYS[3], owner) then
      line_wake(ARGV[7] or '', KEYS[1], KEYS[3], KEYS[2], now_ms, 1)
    end
    register()
    return '4 0 0 0 ' .. nows .. ' ' .. string.format('%.0f', soonest) .. ' '
  end
  -- Its place, if it has one, is used (also by a call that does not wait:
  -- a retry after a draining gateway's 503 that found its place live).
  line_leave(KEYS[3], KEYS[2], owner)
end

-- Free or expired: a new holder gets a new token, above the last one (the
-- hash's, while a tombstone or an expired lease keeps it) and never below
-- the server's clock in microseconds, so it keeps increasing even once
-- the tombstone is gone (docs/fencing.md).
local tok = string.format('%.0f', math.max((tonumber(cur[2] or '') or 0) + 1, now_us))
local exps = string.format('%.0f', exp)
-- No DEL first: the hash only ever holds these four fields and
-- lock_delay (a tombstone the token alone), so HSET (and HDEL of a
-- lock_delay this grant does not have) replaces the whole lease.
if delay > 0 then
  redis.call('HSET', KEYS[1], 'owner', owner, 'token', tok, 'acquired_at', nows, 'expires_at', exps,
    'lock_delay', ARGV[6])
else
  redis.call('HSET', KEYS[1], 'owner', owner, 'token', tok, 'acquired_at', nows, 'expires_at', exps)
  if cur[5] then
    redis.call('HDEL', KEYS[1], 'lock_delay')
  end
end
redis.call('PEXPIREAT', KEYS[1], keep)
if KEYS[4] then
  redis.call('ZADD', KEYS[4], 0, ARGV[5])
end
return '1 ' .. tok .. ' ' .. nows .. ' ' .. exps .. ' ' .. nows .. ' ' .. owner
