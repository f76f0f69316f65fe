package redislock

import (
	"context"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/scripts"
)

// IndexMode says how a grant enters its tenant's lock index (the sorted
// set the listing pages; keyspace.LockIndex, docs/operations.md).
type IndexMode int

const (
	// IndexAuto (the zero value): IndexSecondStep on a *redis.ClusterClient
	// (or a Batcher on one), IndexInScript on anything else.
	IndexAuto IndexMode = iota
	// IndexInScript: acquire.lua adds the resource itself, atomically with
	// the grant: one more command inside the script, no round trip. For a
	// single Redis and Sentinel, where a script may touch keys of several
	// hash tags.
	IndexInScript
	// IndexSecondStep: after a new grant, a second script call (IndexAdd,
	// on the index's own slot) adds it before the acquire answers. For
	// Redis Cluster, where one script may touch only one slot's keys.
	IndexSecondStep
	// IndexOff keeps no index (the listing then shows nothing new).
	IndexOff
)

// indexMode resolves IndexAuto for rdb.
func indexMode(m IndexMode, rdb redis.Scripter) IndexMode {
	if m != IndexAuto {
		return m
	}
	if b, ok := rdb.(*Batcher); ok {
		if u, ok := b.rdb.(redis.Scripter); ok {
			rdb = u
		}
	}
	if _, ok := rdb.(*redis.ClusterClient); ok {
		return IndexSecondStep
	}
	return IndexInScript
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

// indexInScript adds the index key and arguments to an acquire.lua call
// when the script writes the index (IndexInScript).
func (l *Locker) indexInScript(tenant, resource string, keys []string, args []interface{}) ([]string, []interface{}) {
	if l.opts.Index != IndexInScript {
		return keys, args
	}
	if len(keys) == 2 {
		args = append(args, "", 0)
	}
	return append(keys, l.indexKey(tenant)), append(args, "index", resource)
}

// indexSecondStep adds a new grant to the index with IndexSecondStep.
// Best effort: the lease is granted whatever happens here.
func (l *Locker) indexSecondStep(ctx context.Context, tenant, resource string) {
	if l.opts.Index != IndexSecondStep {
		return
	}
	if err := scripts.IndexAdd.Run(ctx, l.rdb, []string{l.indexKey(tenant)}, resource).Err(); err != nil {
		if l.opts.OnIndexFailure != nil {
			l.opts.OnIndexFailure()
		}
	}
}

// releaseExtras adds to a release.lua call the index (IndexInScript) and
// the request for the hold time (Options.OnRelease).
func (l *Locker) releaseExtras(tenant, resource string, keys []string, args []interface{}) ([]string, []interface{}) {
	inScript := l.opts.Index == IndexInScript
	if !inScript && l.opts.OnRelease == nil {
		return keys, args
	}
	hold, index := "", ""
	if l.opts.OnRelease != nil {
		hold = "hold"
	}
	if inScript {
		index = "index"
		keys = append(keys, l.indexKey(tenant))
	}
	return keys, append(args, hold, index, resource)
}

// releasedHold decodes release.lua's answer with 'hold': 2 + the hold
// time in milliseconds (an integer, so no array to decode), and reports
// the hold time. Other answers pass as they are.
func (l *Locker) releasedHold(tenant, resource string, n int64) int64 {
	if n < 2 || l.opts.OnRelease == nil {
		return n // without 'hold', 2 and up are no documented answer
	}
	l.opts.OnRelease(tenant, resource, time.Duration(n-2)*time.Millisecond)
	return 1
}
