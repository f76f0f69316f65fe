-- unwatch.lua: an event watcher leaves the waiters of its resource
-- (watch.lua entered it). Waiters in line leave with leave.lua.
--
-- KEYS[1] waiters key (hash; release.lua publishes only while it exists)
-- ARGV[1] the watcher's id
--
-- Reply: how many waiters are left
redis.call('HDEL', KEYS[1], ARGV[1])
return redis.call('HLEN', KEYS[1])
