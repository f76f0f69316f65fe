-- acquire.lua: take a lease on one resource, atomically.
--
-- KEYS[1] lock key   (hash: owner, token, acquired_at, expires_at)
-- KEYS[2] fence key  (string: the last fencing token handed out, written
--         by the two-key layout; the one-key layout only reads it)
-- ARGV[1] owner
-- ARGV[2] ttl in milliseconds (integer > 0)
-- ARGV[3] fence retention in milliseconds: how long the fence outlives the lease
-- ARGV[4] layout (docs/keys.md, "One key or two"):
--         '1' one key: the lock hash is also the fence. It lives until
--             expires_at + retention (PEXPIREAT); a release leaves a
--             tombstone holding only the token. KEYS[2] is read only when
--             the hash has no token (a grant of the two-key layout ended).
--         '0' two keys, as every version before this one: the hash lives
--             until expires_at, KEYS[2] keeps the last token.
-- KEYS[3] waiters key (hash: waiter id -> count), optional: given by a
--         waiting acquire, which is registered there when the lease is
--         someone else's, in the same atomic step as the check, so that a
--         later release publishes (release.lua); absent for a plain acquire
-- ARGV[5] the waiter's id (with KEYS[3]); a grant removes it from there
-- ARGV[6] milliseconds the waiters key must live at least (with KEYS[3])
-- [locks index] ARGV[7] = 'index': the LAST key is the tenant's lock index
--         (a zset scored 0, keyspace.LockIndex) and ARGV[8] the resource;
--         a new grant adds the resource there. Given only where one
--         script may touch two slots' keys (not on Redis Cluster; see
--         docs/operations.md). Without a waiter, ARGV[5..6] are '' and '0'.
-- ARGV[9] (with KEYS[3], optional) how many requests the waiter stands
--         for: its gateway's queue for the resource, the registered value
--         (the listing sums them). Absent (a caller of an older layout)
--         or not a number >= 1: 1. Without the index, ARGV[7..8] are ''.
--
-- Reply: one string, '<flag> <token> <acquired_at_ms> <expires_at_ms> <now_ms> <owner>'
--        flag 1: the caller holds the lease; 0: someone else holds it.
-- The owner comes last, so it may hold any byte (spaces too): the reader
-- splits off the first five fields, all decimal, and keeps the rest.
-- Numbers are formatted as decimal strings, never Lua numbers, so no
-- precision is lost on the way to Go.
--
-- "Held" means expires_at > now (the Redis clock, TIME, so every gateway
-- agrees), never "the key exists": a lease past its expires_at is free
-- even before Redis reaps the key, and a tombstone has no expires_at.
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local owner = ARGV[1]
local ttl = tonumber(ARGV[2])
local retention = tonumber(ARGV[3])
local onekey = ARGV[4] == '1'
local exp = now_ms + ttl
local nows = string.format('%.0f', now_ms)
-- The lock key lives to expires_at (two keys) or beyond it by the
-- retention (one key: the hash is the fence).
local keep = exp
if onekey then
  keep = exp + retention
end

-- [locks index] which keys are which (block kept apart for the hot path)
local waiters = KEYS[3]
local index = nil
if ARGV[7] == 'index' then
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
      redis.call('HSET', waiters, ARGV[5], math.max(math.floor(tonumber(ARGV[9]) or 1), 1))
      if redis.call('PTTL', waiters) < tonumber(ARGV[6]) then
        redis.call('PEXPIRE', waiters, ARGV[6])
      end
    end
    return '0 ' .. cur[2] .. ' ' .. cur[3] .. ' ' .. cur[4] .. ' ' .. nows .. ' ' .. cur[1]
  end
  -- Same owner: idempotent re-acquire keeps the token and moves the expiry.
  if waiters then
    redis.call('HDEL', waiters, ARGV[5])
  end
  local exps = string.format('%.0f', exp)
  redis.call('HSET', KEYS[1], 'expires_at', exps)
  redis.call('PEXPIREAT', KEYS[1], keep)
  if not onekey then
    -- SET, not PEXPIREAT: a lease granted with one key has no fence key
    -- (or an older one), and the hash, now to live only to expires_at,
    -- must not take the token with it. The hash's token is never below
    -- the fence key's (acquire's rule below), so this never lowers it.
    redis.call('SET', KEYS[2], cur[2], 'PXAT', exp + retention)
  end
  return '1 ' .. cur[2] .. ' ' .. cur[3] .. ' ' .. exps .. ' ' .. nows .. ' ' .. owner
end

-- Free or expired: a new holder gets a new token, above every token handed
-- out before on this resource and never below the server's clock in
-- microseconds, so it keeps increasing even if the fence was lost
-- (evicted, restart without persistence).
-- The last token is in the hash (a tombstone, an expired lease: every
-- layout writes the token there and in the fence key alike, so while the
-- hash has a token it is the largest) or, when the hash has none, in the
-- fence key (the two-key layout deletes its hash at the end of a lease).
local last = tonumber(cur[2] or '')
local tok
if onekey then
  if not last then
    last = tonumber(redis.call('GET', KEYS[2]) or '0') or 0
  end
  tok = string.format('%.0f', math.max(last + 1, now_us))
else
  -- One command in the usual case: write the clock's token and read the
  -- last one in the same SET ... GET; only when the last token is not
  -- below the clock (several holders within one microsecond, or the clock
  -- stepped back) is it written again as last + 1.
  tok = string.format('%.0f', now_us)
  local prev = tonumber(redis.call('SET', KEYS[2], tok, 'PXAT', exp + retention, 'GET') or '0') or 0
  last = math.max(last or 0, prev)
  if last + 1 > now_us then
    tok = string.format('%.0f', last + 1)
    redis.call('SET', KEYS[2], tok, 'PXAT', exp + retention)
  end
end
local exps = string.format('%.0f', exp)
-- No DEL first: the hash only ever holds these four fields (this script's,
-- and every earlier version's; a tombstone holds the token alone), so HSET
-- replaces the whole lease.
redis.call('HSET', KEYS[1], 'owner', owner, 'token', tok, 'acquired_at', nows, 'expires_at', exps)
redis.call('PEXPIREAT', KEYS[1], keep)
if waiters then
  redis.call('HDEL', waiters, ARGV[5])
end
-- [locks index] a new holder enters the index (one command, no round trip)
if index then
  redis.call('ZADD', index, 0, ARGV[8])
end
-- [/locks index]
return '1 ' .. tok .. ' ' .. nows .. ' ' .. exps .. ' ' .. nows .. ' ' .. owner
