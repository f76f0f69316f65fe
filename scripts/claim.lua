-- claim.lua: claim (scope, key) for work that must happen once, atomically.
--
-- KEYS[1] claim key (hash: state = pending | done | abandoned, owner, token,
--         claimed_at, expires_at while pending; result, completed_at when done)
-- ARGV[1] owner
-- ARGV[2] ttl in milliseconds (integer > 0)
-- ARGV[3] retention in milliseconds: how long a pending claim's hash outlives
--         its lease, so the next holder's token is still larger
-- ARGV[4] '1' when the gateway waits for replicas after this script
--         (--min-replicas), else '0': a done answer then rewrites its state
--         (HSET of the same value, which Redis replicates), so the WAIT
--         that follows on this connection covers the completion it read.
--         A read writes nothing, and WAIT only waits for the connection's
--         own writes: without it a completion not yet on any replica
--         could be answered done, and then lost by a failover.
--
-- Reply: {1, token, claimed_at_ms, expires_at_ms, created, reclaimed}
--            pending, held by the caller; created = 1 when this call started
--            it (do the work now), reclaimed = 1 when it replaced a pending
--            claim whose lease had expired
--        {0, retry_ms}
--            another owner's pending claim is live for retry_ms more
--        {2, token, completed_at_ms, result}
--            done: the work already happened; result as stored
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local owner = ARGV[1]
local exp = now_ms + tonumber(ARGV[2])
local exps = string.format('%.0f', exp)
local retention = tonumber(ARGV[3])

local h = redis.call('HMGET', KEYS[1], 'state', 'owner', 'token', 'claimed_at', 'expires_at', 'completed_at', 'result')
if h[1] == 'done' then
  if ARGV[4] == '1' then
    redis.call('HSET', KEYS[1], 'state', 'done')
  end
  return {2, h[3], h[6], h[7]}
end
local reclaimed = 0
if h[1] == 'pending' then
  local cur = tonumber(h[5])
  if cur > now_ms then
    if h[2] ~= owner then
      -- A refusal must not be read from a replica (acquire.lua's
      -- register()): HDEL of a field no claim has is the write it refuses.
      redis.call('HDEL', KEYS[1], 'primary_check')
      return {0, string.format('%.0f', cur - now_ms)}
    end
    redis.call('HSET', KEYS[1], 'expires_at', exps)
    redis.call('PEXPIREAT', KEYS[1], exp + retention)
    return {1, h[3], h[4], exps, 0, 0}
  end
  reclaimed = 1
end

local last = tonumber(h[3] or '0') or 0
local token = last + 1
if now_us > token then
  token = now_us
end
local tok = string.format('%.0f', token)
local acq = string.format('%.0f', now_ms)
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'state', 'pending', 'owner', owner, 'token', tok, 'claimed_at', acq, 'expires_at', exps)
redis.call('PEXPIREAT', KEYS[1], exp + retention)
return {1, tok, acq, exps, 1, reclaimed}
