-- floor_del.lua: the go-redis floor's release (benchmarks only): delete
-- KEYS[1] if it still holds ARGV[1], as bsm/redislock does.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
