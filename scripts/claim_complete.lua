-- claim_complete.lua: store the result of a pending claim, checking owner AND token.
--
-- KEYS[1] claim key (see claim.lua)
-- ARGV[1] owner
-- ARGV[2] token
-- ARGV[3] result (one JSON value, stored byte for byte)
-- ARGV[4] keep in milliseconds: how long the done claim is kept
-- ARGV[5] '1' when the gateway waits for replicas (claim.lua's ARGV[4]): a
--         replayed completion rewrites its state, so the WAIT covers it
--
-- Reply: {1, token, completed_at_ms, result}  completed now
--        {3, token, completed_at_ms, result}  already done by this very completion (same owner, token, result)
--        {0}                                  nothing pending (none, abandoned, or the lease expired)
--        {-1}                                 another owner or token holds it, or another completion did it
-- First a write that changes nothing (and so is not replicated): a
-- read-only replica (a demoted primary a connection still reached during
-- a failover) refuses it, and the call fails with READONLY instead of an
-- answer read from data that may be stale (docs/safety.md). No claim has
-- the field.
redis.call('HDEL', KEYS[1], 'primary_check')
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('HMGET', KEYS[1], 'state', 'owner', 'token', 'expires_at', 'completed_at', 'result')
if h[1] == 'done' then
  if h[2] == ARGV[1] and h[3] == ARGV[2] and h[6] == ARGV[3] then
    if ARGV[5] == '1' then
      redis.call('HSET', KEYS[1], 'state', 'done')
    end
    return {3, h[3], h[5], h[6]}
  end
  return {-1}
end
if h[1] ~= 'pending' or tonumber(h[4]) <= now_ms then
  return {0}
end
if h[2] ~= ARGV[1] or h[3] ~= ARGV[2] then
  return {-1}
end
local at = string.format('%.0f', now_ms)
redis.call('HSET', KEYS[1], 'state', 'done', 'result', ARGV[3], 'completed_at', at)
redis.call('HDEL', KEYS[1], 'expires_at')
redis.call('PEXPIREAT', KEYS[1], now_ms + tonumber(ARGV[4]))
return {1, h[3], at, ARGV[3]}
