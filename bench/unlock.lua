-- unlock.lua: the go-redis floor's release: delete the key only if it
-- still holds the caller's value (compare-and-delete).
--
-- KEYS[1] lock key
-- ARGV[1] owner value set by SET NX PX
--
-- Reply: 1 deleted, 0 not held by this owner (or gone)
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
