-- sem_acquire.lua: take a permit of a counting semaphore, atomically.
--
-- KEYS[1] permits key (zset: owner -> expires_at_ms; its size is the number of holders)
-- KEYS[2] holders key (hash: owner -> "token:acquired_at_ms")
-- KEYS[3] limit key   (string: the limit in force while permits are held)
-- KEYS[4] fence key   (string: the last fencing token handed out for this name)
-- KEYS[5] waiters key (hash: 'q:' .. owner -> its ticket's deadline; line.lua)
-- KEYS[6] line key    (zset: owner -> arrival; line.lua)
-- ARGV[1] owner
-- ARGV[2] ttl in milliseconds (integer > 0)
-- ARGV[3] limit (integer 1..10000)
-- ARGV[4] fence retention in milliseconds: how long the fence outlives the last permit
-- ARGV[5] the lease of the caller's ticket in ms, 0 for a call that does
--         not wait: a refused waiting call takes or keeps its place in line
--
-- The line: a new permit goes to a non-holder only when fewer live
-- tickets than free slots stand ahead of it (none ahead, with one free
-- slot); so a call that does not wait is refused while the waiters in
-- line fill the free slots. The reply's retry_ms is then the soonest
-- deadline of their tickets.
--
-- Reply: {1, token, acquired_at_ms, expires_at_ms, holders, limit}  the caller holds a new permit
--        {2, token, acquired_at_ms, expires_at_ms, holders, limit}  the caller held it already: renewed
--        {0, holders, limit, retry_ms}                              full: retry_ms until the earliest expiry
--        {-1, limit_in_force, holders}                              the limit differs from the one in force
-- Tokens and times are decimal strings; counts are integers.
--
-- Expired permits (expires_at <= now by the Redis clock) are dropped first,
-- so a crashed holder never keeps a slot. The same owner re-acquiring keeps
-- its token and acquired_at and moves its expiry.
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local owner = ARGV[1]
local ttl = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local retention = tonumber(ARGV[4])
local exp = now_ms + ttl
local exps = string.format('%.0f', exp)
local lease = tonumber(ARGV[5])

local gone = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', string.format('%.0f', now_ms))
for i = 1, #gone do
  redis.call('ZREM', KEYS[1], gone[i])
  redis.call('HDEL', KEYS[2], gone[i])
end

local n = redis.call('ZCARD', KEYS[1])
if n > 0 then
  local cur = tonumber(redis.call('GET', KEYS[3]) or '')
  if cur and cur ~= limit then
    -- A refusal must not be read from a replica (acquire.lua's register()):
    -- an empty ZREMRANGEBYSCORE is the write a replica refuses, as in
    -- sem_release.lua.
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '+inf', '-inf')
    return {-1, string.format('%.0f', cur), n}
  end
end

-- Every key lives until the last permit expires; the fence a while longer.
local function keep()
  local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
  local until_ms = tonumber(last[2])
  redis.call('PEXPIREAT', KEYS[1], until_ms)
  redis.call('PEXPIREAT', KEYS[2], until_ms)
  redis.call('PEXPIREAT', KEYS[3], until_ms)
  redis.call('PEXPIREAT', KEYS[4], until_ms + retention)
end

if redis.call('ZSCORE', KEYS[1], owner) then
  local h = redis.call('HGET', KEYS[2], owner) or ''
  local sep = string.find(h, ':', 1, true)
  if sep then
    if lease > 0 then
      line_leave(KEYS[6], KEYS[5], owner)
    end
    redis.call('ZADD', KEYS[1], exp, owner)
    keep()
    return {2, string.sub(h, 1, sep - 1), string.sub(h, sep + 1), exps, n, limit}
  end
  -- A permit without its holder record cannot happen; drop it and grant anew.
  redis.call('ZREM', KEYS[1], owner)
  n = n - 1
end

local retry = nil
local lined = redis.call('EXISTS', KEYS[6]) == 1
if n >= limit then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  retry = tonumber(first[2])
elseif lined then
  local ahead, soonest = line_ahead(KEYS[6], KEYS[5], owner, now_ms, limit - n)
  if ahead >= limit - n then
    retry = soonest
  end
end
if retry then
  if lease > 0 then
    line_join(KEYS[6], KEYS[5], owner, now_us, now_ms, lease)
  else
    redis.call('ZREMRANGEBYSCORE', KEYS[1], '+inf', '-inf')
  end
  return {0, n, limit, string.format('%.0f', math.max(retry - now_ms, 0))}
end
if lined then
  line_leave(KEYS[6], KEYS[5], owner)
end

-- A new permit gets a new token, never below the server clock in
-- microseconds (as lock tokens).
local last = tonumber(redis.call('GET', KEYS[4]) or '0') or 0
local token = last + 1
if now_us > token then
  token = now_us
end
local tok = string.format('%.0f', token)
local acq = string.format('%.0f', now_ms)
redis.call('SET', KEYS[4], tok)
redis.call('ZADD', KEYS[1], exp, owner)
redis.call('HSET', KEYS[2], owner, tok .. ':' .. acq)
redis.call('SET', KEYS[3], limit)
keep()
return {1, tok, acq, exps, n + 1, limit}
