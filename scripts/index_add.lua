-- index_add.lua: enter a granted resource in its tenant's lock index, as
-- a second step after acquire.lua where that script may not touch the
-- index (Redis Cluster: the index is in another slot).
--
-- KEYS[1] the tenant's lock index (zset, every member scored 0)
-- ARGV[1] the resource
--
-- Reply: 1 added, 0 already there
return redis.call('ZADD', KEYS[1], 0, ARGV[1])
