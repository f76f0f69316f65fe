-- proclaim.lua: set the value of an election's leadership (elections live
-- on the lock engine: the lease's owner is the leader, its token the
-- term; docs/elections.md). Run by a proclaim, and by a campaign right
-- after acquire.lua granted or renewed the leadership.
--
-- KEYS[1] the election's lock key (acquire.lua's hash, plus the fields
--         value and value_term: the value proclaimed for that term)
-- KEYS[2] its waiters key: the change is published only while it exists
--         (campaigns wait, or watchers watch), as release.lua does
-- ARGV[1] candidate (the lease's owner)
-- ARGV[2] term (the lease's token)
-- ARGV[3] value
-- ARGV[4] channel told about a change, with the lock key as message
--         ("" = none; a channel with a hash tag is a shard channel:
--         SPUBLISH)
--
-- Reply: {1, token, acquired_at_ms, expires_at_ms, owner, value}  set
--        {0}                                                      no live lease
--        {-1}                                                     another candidate or term
-- A value whose value_term is not the lease's token belongs to an earlier
-- term and is never shown (elect_status.lua): a new term starts without
-- one until its campaign proclaims it.
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
-- A refusal below writes nothing, so a read-only replica (a demoted
-- primary a connection still reached during a failover) would answer it
-- from data that may lack the lease. So each refusal first runs HDEL of a
-- field no lease has: a write that changes nothing (nothing is
-- replicated), which a replica refuses, and the call fails with READONLY
-- instead of a false refusal (docs/safety.md). Inline, not a function:
-- a Lua closure per call would cost the grants and releases too.
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token', 'acquired_at', 'expires_at', 'value', 'value_term')
if not cur[1] or not cur[4] or tonumber(cur[4]) <= now_ms then
  redis.call('HDEL', KEYS[1], 'primary_check')
  return {0}
end
if cur[1] ~= ARGV[1] or cur[2] ~= ARGV[2] then
  redis.call('HDEL', KEYS[1], 'primary_check')
  return {-1}
end
if cur[6] ~= cur[2] or cur[5] ~= ARGV[3] then
  redis.call('HSET', KEYS[1], 'value', ARGV[3], 'value_term', cur[2])
  if ARGV[4] ~= '' and redis.call('EXISTS', KEYS[2]) == 1 then
    redis.call(string.find(ARGV[4], '{', 1, true) and 'SPUBLISH' or 'PUBLISH', ARGV[4], KEYS[1])
  end
end
return {1, cur[2], cur[3], cur[4], cur[1], ARGV[3]}
