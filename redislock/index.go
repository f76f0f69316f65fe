package redislock

import (
	"context"
	"sync/atomic"

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

// indexFailures counts second-step index writes that failed (the lease is
// granted but missing from listings until its next grant). Read it with
// IndexFailures.
var indexFailures atomic.Uint64

// IndexFailures is how many IndexSecondStep writes failed in this process.
func IndexFailures() uint64 { return indexFailures.Load() }

// indexInScript adds the index key and arguments to an acquire.lua call
// when the script writes the index (IndexInScript).
func (l *Locker) indexInScript(resource string, keys []string, args []interface{}) ([]string, []interface{}) {
	if l.opts.Index != IndexInScript {
		return keys, args
	}
	if len(keys) == 2 {
		args = append(args, "", 0)
	}
	return append(keys, l.keys.LockIndex(l.tenant)), append(args, "index", resource)
}

// indexSecondStep adds a new grant to the index with IndexSecondStep.
// Best effort: the lease is granted whatever happens here.
func (l *Locker) indexSecondStep(ctx context.Context, resource string) {
	if l.opts.Index != IndexSecondStep {
		return
	}
	if err := scripts.IndexAdd.Run(ctx, l.rdb, []string{l.keys.LockIndex(l.tenant)}, resource).Err(); err != nil {
		indexFailures.Add(1)
	}
}
