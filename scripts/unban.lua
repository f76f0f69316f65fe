-- unban.lua: an operator lifts a user's ban.
--
-- KEYS[1] ban
-- KEYS[2] webhook outbox (stream), optional: the unban event is written
--         in this same script, only when there was a ban to lift
-- ARGV[1] event id, ARGV[2] tenant, ARGV[3] user id, ARGV[4] operator,
-- ARGV[5] outbox length bound (with KEYS[2])
--
-- Reply: 1 when a ban was lifted, 0 when there was none.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = redis.call('DEL', KEYS[1])
if n == 1 and KEYS[2] then
  redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[5], '*', 'id', ARGV[1], 'type', 'unban',
    'tenant', ARGV[2], 'user_id', ARGV[3], 'at', string.format('%.0f', now), 'actor', ARGV[4])
end
return n
