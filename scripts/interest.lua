-- interest.lua: a waiting acquire leaves the waiters of its resource
-- (acquire.lua registered it when it found the resource held).
--
-- KEYS[1] waiters key (hash: waiter id -> 1; release.lua publishes only
--         while it exists)
-- ARGV[1] the waiter's id
--
-- Reply: how many waiters are left
redis.call('HDEL', KEYS[1], ARGV[1])
return redis.call('HLEN', KEYS[1])
