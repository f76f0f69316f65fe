-- ban.lua: an operator bans a user (every user lock of the tenant) for a while.
--
-- KEYS[1] ban  (hash: until, reason, by, source, lock, created; PEXPIREAT = until)
-- ARGV[1] length in milliseconds (> 0)
-- ARGV[2] reason ("" allowed)
-- ARGV[3] operator
--
-- Reply: {until_ms, now_ms} as decimal strings. An operator's ban replaces
-- any ban in place (also a longer one: the operator decides).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ban_end = now + tonumber(ARGV[1])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'until', string.format('%.0f', ban_end), 'reason', ARGV[2],
  'by', ARGV[3], 'source', 'operator', 'lock', '', 'created', string.format('%.0f', now))
redis.call('PEXPIREAT', KEYS[1], ban_end)
return {string.format('%.0f', ban_end), string.format('%.0f', now)}
