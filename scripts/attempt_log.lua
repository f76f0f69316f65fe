-- attempt_log.lua: one attempt's entry in the attempt log, on Redis
-- Cluster, where the log has a slot of its own and is written in a second
-- step after user_attempt.lua (prelude/attempt_log.lua is the writer).
--
-- KEYS[1] the attempt log (stream)
-- ARGV[1] the entry's d, as user_attempt.lua returned it
-- ARGV[2] the attempt's time in ms (user_attempt.lua's TIME)
-- ARGV[3] the log's length bound, ARGV[4] its retention in ms
-- ARGV[5] the attempt's ttl in ms
-- Reply: 1.
local d = ARGV[1]
local n = tonumber(string.match(d, '^%d+')) or 0
log_attempt(KEYS[1], tonumber(ARGV[2]), n, d, ARGV[3], tonumber(ARGV[4]), tonumber(ARGV[5]))
return 1
