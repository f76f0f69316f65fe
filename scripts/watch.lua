-- watch.lua: an event watcher (GET /locks/{resource}/events) joins the
-- waiters of a resource, so that its releases publish (release.lua
-- publishes only while the waiters key exists). interest.lua removes it.
--
-- KEYS[1] waiters key (hash: id -> 1 for a waiting acquire, 'w' for a watcher)
-- ARGV[1] the watcher's id
-- ARGV[2] milliseconds the key must live at least
--
-- Reply: 1
redis.call('HSET', KEYS[1], ARGV[1], 'w')
if redis.call('PTTL', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 1
