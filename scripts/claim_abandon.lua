-- claim_abandon.lua: end the owner's pending claim so another caller may claim at once.
--
-- KEYS[1] claim key (see claim.lua)
-- ARGV[1] owner
-- ARGV[2] token
--
-- Reply:  1 abandoned (the hash stays as state = abandoned, keeping the token,
--           so the next holder's token is larger)
--         0 nothing pending (none, abandoned, or the lease expired)
--        -1 another owner or token holds it, or it is done
-- First a write that changes nothing (and so is not replicated): a
-- read-only replica (a demoted primary a connection still reached during
-- a failover) refuses it, and the call fails with READONLY instead of an
-- answer read from data that may be stale (docs/safety.md). No claim has
-- the field.
redis.call('HDEL', KEYS[1], 'primary_check')
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local h = redis.call('HMGET', KEYS[1], 'state', 'owner', 'token', 'expires_at')
if h[1] == 'done' then
  return -1
end
if h[1] ~= 'pending' or tonumber(h[4]) <= now_ms then
  return 0
end
if h[2] ~= ARGV[1] or h[3] ~= ARGV[2] then
  return -1
end
redis.call('HSET', KEYS[1], 'state', 'abandoned')
return 1
