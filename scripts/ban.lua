-- ban.lua: an operator bans a user (every user lock of the tenant) for a while.
--
-- KEYS[1] ban  (hash: until, reason, by, source, lock, created; PEXPIREAT = until)
-- KEYS[2] webhook outbox (stream), optional: the ban event is written in
--         this same script (see user_attempt.lua)
-- ARGV[1] length in milliseconds (> 0)
-- ARGV[2] reason ("" allowed)
-- ARGV[3] operator
-- ARGV[4] event id, ARGV[5] tenant, ARGV[6] user id, ARGV[7] outbox
--         length bound (with KEYS[2])
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
if KEYS[2] then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[7], '*', 'id', ARGV[4], 'type', 'ban',
    'tenant', ARGV[5], 'user_id', ARGV[6], 'at', string.format('%.0f', now),
    'banned_until', string.format('%.0f', ban_end), 'source', 'operator', 'actor', ARGV[3],
    'reason', ARGV[2])
end
return {string.format('%.0f', ban_end), string.format('%.0f', now)}
