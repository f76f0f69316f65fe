package redislock

import (
	"context"
	"strconv"
	"sync/atomic"
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

// releaseExtras adds to a release.lua call the index (IndexInScript) and
// the request for the hold time (Options.OnRelease).
func (l *Locker) releaseExtras(resource string, keys []string, args []interface{}) ([]string, []interface{}) {
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
		keys = append(keys, l.keys.LockIndex(l.tenant))
	}
	return keys, append(args, hold, index, resource)
}

// releasedHold decodes release.lua's {1, acquired_at_ms, now_ms} and
// reports the hold time.
func (l *Locker) releasedHold(resource string, arr []interface{}) (int64, bool) {
	if len(arr) != 3 {
		return 0, false
	}
	flag, ok1 := arr[0].(int64)
	acq, ok2 := arr[1].(string)
	now, ok3 := arr[2].(string)
	if !ok1 || !ok2 || !ok3 || flag != 1 {
		return 0, false
	}
	a, err1 := strconv.ParseInt(acq, 10, 64)
	n, err2 := strconv.ParseInt(now, 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	if l.opts.OnRelease != nil && a > 0 {
		l.opts.OnRelease(l.tenant, resource, time.Duration(n-a)*time.Millisecond)
	}
	return 1, true
}
