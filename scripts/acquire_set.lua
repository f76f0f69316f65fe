-- acquire_set.lua: take the leases on a set of resources, all or none,
-- atomically (docs/lock-sets.md).
--
-- KEYS[3i-2] lock key of member i (acquire.lua's KEYS[1]), i = 1..n
-- KEYS[3i-1] waiters key of member i (acquire.lua's KEYS[2])
-- KEYS[3i]   line of member i (acquire.lua's KEYS[3])
-- KEYS[3n+1] the tenant's lock index, on a single Redis and Sentinel (as
--            in acquire.lua); absent on Redis Cluster, where the gateway
--            runs this script once per member (one slot each) and adds
--            new grants to the index in a second step
-- ARGV[1] owner
-- ARGV[2] ttl in milliseconds (integer > 0)
-- ARGV[3] fence retention in milliseconds
-- ARGV[4] the lease of the caller's tickets in milliseconds (a waiting
--         set: a refused try takes or keeps its place in the line of
--         EVERY member, in this one step, so the set stands in all its
--         lines in one arrival order with every other waiter); 0 for a
--         call that does not wait
-- ARGV[5] lock delay in milliseconds (acquire.lua's ARGV[6])
-- ARGV[6] '1' for a try outside the lines (Redis Cluster, one member per
--         run; docs/lock-sets.md): no line is read or joined, and a
--         refused waiting try only enters its ticket's deadline in the
--         waiters key, so that releases publish; else '0'
-- ARGV[7..6+n] the resources (the index's members), n = #KEYS / 3
--
-- Each member follows acquire.lua's rules: held means an owner and
-- expires_at > now (Redis TIME); another owner's live lease, or another
-- owner's expired lease still in its lock delay, refuses the member; the
-- owner's own live lease is renewed (token kept). Nothing is written
-- unless every member can be granted. A member whose line has others
-- ahead of the caller (line.lua) refuses it too, with free_at_ms the
-- soonest deadline of their tickets.
--
-- Reply: {1, now_ms, then per member: token, acquired_at_ms, expires_at_ms}
--          all granted, in KEYS order (the owner is the caller's)
--        {0, now_ms, then per refused member: i, free_at_ms, delayed}
--          none granted; free_at_ms is when the holder's lease (delayed
--          '1': its lock delay) ends. Numbers are decimal strings.
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local nows = string.format('%.0f', now_ms)
local owner = ARGV[1]
local n = math.floor(#KEYS / 3)
local exp = now_ms + tonumber(ARGV[2])
local delay = tonumber(ARGV[5])
local keep = exp + math.max(tonumber(ARGV[3]), delay)
local exps = string.format('%.0f', exp)
local lease = tonumber(ARGV[4])
local waiter = lease > 0
local inline = ARGV[6] ~= '1'

local cur = {}
local lined = {}
local refused = {0, nows}
for i = 1, n do
  local c = redis.call('HMGET', KEYS[3 * i - 2], 'owner', 'token', 'acquired_at', 'expires_at', 'lock_delay')
  cur[i] = c
  local mine = c[1] == owner and c[4] and tonumber(c[4]) > now_ms
  local ahead, soonest = 0, nil
  lined[i] = inline and not mine and redis.call('EXISTS', KEYS[3 * i]) == 1
  if lined[i] then
    ahead, soonest = line_ahead(KEYS[3 * i], KEYS[3 * i - 1], owner, now_ms, 1)
  end
  if ahead > 0 then
    refused[#refused + 1] = tostring(i)
    refused[#refused + 1] = string.format('%.0f', soonest)
    refused[#refused + 1] = '0'
  elseif c[1] and c[4] and c[1] ~= owner then
    local e = tonumber(c[4])
    if e > now_ms then
      refused[#refused + 1] = tostring(i)
      refused[#refused + 1] = c[4]
      refused[#refused + 1] = '0'
    elseif c[5] and e + tonumber(c[5]) > now_ms then
      refused[#refused + 1] = tostring(i)
      refused[#refused + 1] = string.format('%.0f', e + tonumber(c[5]))
      refused[#refused + 1] = '1'
    end
  end
end

if #refused > 2 then
  if waiter then
    for i = 1, n do
      if inline then
        line_join(KEYS[3 * i], KEYS[3 * i - 1], owner, now_us, now_ms, lease)
      else
        redis.call('HSET', KEYS[3 * i - 1], 'q:' .. owner, string.format('%.0f', now_ms + lease))
        if redis.call('PTTL', KEYS[3 * i - 1]) < lease then
          redis.call('PEXPIRE', KEYS[3 * i - 1], lease)
        end
      end
    end
  else
    -- A refusal must not be read from a replica: acquire.lua's register().
    redis.call('HDEL', KEYS[1], 'primary_check')
  end
  return refused
end

local out = {1, nows}
for i = 1, n do
  local c = cur[i]
  local key = KEYS[3 * i - 2]
  local tok, acq
  if c[1] == owner and c[4] and tonumber(c[4]) > now_ms then
    -- The owner's own live lease: kept, its expiry moved.
    tok, acq = c[2], c[3]
    redis.call('HSET', key, 'expires_at', exps)
  else
    tok = string.format('%.0f', math.max((tonumber(c[2] or '') or 0) + 1, now_us))
    acq = nows
    redis.call('HSET', key, 'owner', owner, 'token', tok, 'acquired_at', nows, 'expires_at', exps)
    if KEYS[3 * n + 1] then
      redis.call('ZADD', KEYS[3 * n + 1], 0, ARGV[6 + i])
    end
  end
  if delay > 0 then
    redis.call('HSET', key, 'lock_delay', ARGV[5])
  elseif c[5] then
    redis.call('HDEL', key, 'lock_delay')
  end
  redis.call('PEXPIREAT', key, keep)
  if waiter or lined[i] then
    line_leave(KEYS[3 * i], KEYS[3 * i - 1], owner)
  end
  out[#out + 1] = tok
  out[#out + 1] = acq
  out[#out + 1] = exps
end
return out
