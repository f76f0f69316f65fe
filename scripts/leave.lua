-- leave.lua: a waiter whose wait ended without the lease (wait_ms passed,
-- the client left, an error) takes its ticket out of the line
-- (line.lua). If it stood first, the next in line is woken at once: the
-- message names them (line_wake).
--
-- KEYS[1] the name's release message (a lock key, a semaphore's permits key)
-- KEYS[2] the line's ticket hash (waiters key)
-- KEYS[3] the line (queue key)
-- ARGV[1] owner
-- ARGV[2] release channel ('' = none; a channel with a hash tag: SPUBLISH)
--
-- Reply: 1 it stood first and others wait (published), else 0
local first = redis.call('ZRANGE', KEYS[3], 0, 0)[1] == ARGV[1]
line_leave(KEYS[3], KEYS[2], ARGV[1])
if first and ARGV[2] ~= '' and redis.call('EXISTS', KEYS[3]) == 1 then
  local t = redis.call('TIME')
  line_wake(ARGV[2], KEYS[1], KEYS[3], KEYS[2], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), 1)
  return 1
end
return 0
