package redislock

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/scripts"
)

// The tenant's lock index (the sorted set the listing pages;
// keyspace.LockIndex, docs/operations.md) has one strategy per deployment
// kind, read from the client:
//
//   - a single Redis and Sentinel: acquire.lua adds a new grant and
//     release.lua and force_release.lua take it out, atomically with the
//     change: one more command inside the script, no round trip;
//   - Redis Cluster, where a script may touch only one slot's keys and the
//     index has a slot of its own: after a new grant, a second script call
//     (index_add.lua) adds it before the acquire answers; listings and
//     sweeps prune the entries of leases that ended.

// onCluster says whether rdb (or the client under a Batcher) is a Redis
// Cluster client.
func onCluster(rdb redis.Scripter) bool {
	if b, ok := rdb.(*Batcher); ok {
		if u, ok := b.rdb.(redis.Scripter); ok {
			rdb = u
		}
	}
	_, ok := rdb.(*redis.ClusterClient)
	return ok
}

// indexKeys caches each tenant's index key, so that an acquire or a
// release does not build it (two allocations) every time. Shared by a
// Locker and its Tenant views.
type indexKeys struct {
	mu sync.RWMutex
	m  map[string]string
}

// maxCachedIndexKeys bounds the cache (tenants come from the key file).
const maxCachedIndexKeys = 10000

func (l *Locker) indexKey(tenant string) string {
	c := l.indexCache
	if c == nil {
		return l.keys.LockIndex(tenant)
	}
	c.mu.RLock()
	k, ok := c.m[tenant]
	c.mu.RUnlock()
	if ok {
		return k
	}
	k = l.keys.LockIndex(tenant)
	c.mu.Lock()
	if len(c.m) < maxCachedIndexKeys {
		c.m[tenant] = k
	}
	c.mu.Unlock()
	return k
}

// indexSecondStep adds a new grant to the index on Redis Cluster. Best
// effort: the lease is granted whatever happens here.
func (l *Locker) indexSecondStep(ctx context.Context, tenant, resource string) {
	if !l.secondStepIndex {
		return
	}
	if err := scripts.IndexAdd.Run(ctx, l.rdb, []string{l.indexKey(tenant)}, resource).Err(); err != nil {
		if l.cfg.OnIndexFailure != nil {
			l.cfg.OnIndexFailure()
		}
	}
}
