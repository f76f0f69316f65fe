-- elect_status.lua: read an election's leadership (status.lua's lease,
-- with the value proclaimed for its term).
--
-- KEYS[1] the election's lock key (proclaim.lua)
--
-- Reply: {1, token, acquired_at_ms, expires_at_ms, owner, value, proclaimed}  a leader
--        {0}                                                                  none, or expired
-- The value is '' and proclaimed 0 until the term's campaign has
-- proclaimed one (the step right after its acquire).
local t = redis.call('TIME')
local now_ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = redis.call('HMGET', KEYS[1], 'owner', 'token', 'acquired_at', 'expires_at', 'value', 'value_term')
if not cur[1] or not cur[4] or tonumber(cur[4]) <= now_ms then
  return {0}
end
if cur[6] == cur[2] and cur[5] then
  return {1, cur[2], cur[3], cur[4], cur[1], cur[5], 1}
end
return {1, cur[2], cur[3], cur[4], cur[1], '', 0}
