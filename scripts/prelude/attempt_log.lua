-- attempt_log.lua: the attempt log's one writer (docs/abuse.md,
-- "Backtesting a policy"). Not a script of its own: it is put in front of
-- user_attempt.lua (which logs in the same script) and attempt_log.lua
-- (which logs in a second step on Redis Cluster, where the log has a slot
-- of its own).
--
-- An entry's id is the attempt's time; its one field, d "n w t o b user"
-- (one field: the fewest allocations when a million are read back), holds
-- n its number in the window (0: refused), w its offset from the window's
-- start, t the ttl, o the outcome (held, repeated, flagged, banned =
-- refused, allowlisted, shadow), b the end of the ban this attempt placed,
-- or of the one that refused it (0: none), then the user id (last: it may
-- hold spaces).

-- log_attempt appends entry d of an attempt made at now (ms), number n in
-- its window, to the stream at key. One XADD per attempt, trimming by
-- length (MAXLEN ~ maxlen) in even milliseconds and by age (MINID ~ now -
-- retention) in odd ones: both bounds hold for the price of one command.
-- The stream outlives its last window start by the retention and the ttl,
-- so a lock nobody tries any more goes.
local function log_attempt(key, now, n, d, maxlen, retention, ttl)
  local by, bound = 'MAXLEN', maxlen
  if now % 2 == 1 then by, bound = 'MINID', string.format('%.0f', now - retention) end
  -- A stream whose last id is ahead (a clock that went back) gets the
  -- next id and the time in a field.
  local ok = redis.pcall('XADD', key, by, '~', bound, string.format('%.0f', now) .. '-*', 'd', d)
  if type(ok) == 'table' and ok['err'] then
    redis.call('XADD', key, by, '~', bound, '*', 'd', d, 'ms', string.format('%.0f', now))
  end
  if n <= 1 then
    redis.call('PEXPIRE', key, retention + ttl)
  end
end
