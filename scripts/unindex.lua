-- unindex.lua: remove entries from a flag index (a sorted set of
-- "<lock>:<user id>" scored by last_flagged_at in ms), each only while it
-- still has the score the caller read. An entry re-written by a new flag
-- since then has a new score and stays: a listing that prunes a stale
-- entry, or a clear, never hides a flag recorded meanwhile.
--
-- KEYS[1] the index (sorted set)
-- ARGV    pairs: member, score (ms as a decimal string)
--
-- Reply: the number of entries removed.
local removed = 0
for i = 1, #ARGV - 1, 2 do
  local cur = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if cur and tonumber(cur) == tonumber(ARGV[i + 1]) then
    removed = removed + redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return removed
