-- interest.lua: count the waiting acquires of one resource, fleet-wide, so
-- that a release publishes a wake-up only when someone waits (release.lua).
--
-- KEYS[1] waiters key (string: how many acquires wait on the resource)
-- ARGV[1] +1 (a waiter arrives) or -1 (it leaves)
-- ARGV[2] milliseconds the count must live at least (the arriving waiter's
--         wait plus a margin); a gateway that dies without leaving is
--         forgotten when it runs out
--
-- Reply: the count after the change (0: the key is gone)
local n = redis.call('INCRBY', KEYS[1], ARGV[1])
if n <= 0 then
  redis.call('DEL', KEYS[1])
  return 0
end
local ttl = tonumber(ARGV[2])
if tonumber(ARGV[1]) > 0 and redis.call('PTTL', KEYS[1]) < ttl then
  redis.call('PEXPIRE', KEYS[1], ttl)
end
return n
