package semaphore_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/semaphore"
)

// TestShardedSemaphoreWakeUpOnRealCluster: with ShardedReleases a
// semaphore release SPUBLISHes on the semaphore's shard channel (a script
// may publish only to a channel of its own slot), and a wait subscribed
// there is woken by it: the permit has a minute left and polling is off,
// so nothing else wakes it within the bound.
func TestShardedSemaphoreWakeUpOnRealCluster(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	rc := cl.Client(t)
	prefix := fmt.Sprintf("semsh%d:", time.Now().UnixNano())
	// What the Waiter reports through its callbacks, as /metrics reads
	// it; releases here are all sharded.
	var sharded, shardChannels atomic.Int64
	w := redislock.NewWaiter(rc, redislock.WaiterOptions{Channel: prefix + "released", Shards: rc, PollInterval: time.Hour,
		OnMessage: func(bool) { sharded.Add(1) }, OnShardChannels: func(n int) { shardChannels.Store(int64(n)) }})
	t.Cleanup(w.Close)
	// The confirmation of the Waiter's own subscription wakes every wait
	// for a re-check too: let it come first, so each wait below is woken
	// for exactly one re-check before the release.
	redistest.Eventually(t, 10*time.Second, "the waiter subscribes", w.Active)
	s := semaphore.New(rc, w, redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released", ShardedReleases: true})
	tries := redistest.ScriptsBy(rc, "b")
	for i := 0; i < 6; i++ {
		name := fmt.Sprintf("pool-%d", i)
		// The last round's shard channel is dropped once its queue is
		// empty; until then a count of one could be that channel.
		redistest.Eventually(t, 10*time.Second, name+": no shard channel left", func() bool { return shardChannels.Load() == 0 })
		first, err := s.Acquire(ctx, "", leasegate.SemaphoreRequest{Name: name, Owner: "a", TTL: time.Minute, Limit: 1})
		if err != nil || !first.Acquired {
			t.Fatalf("%s: first acquire: got %+v, %v; want acquired", name, first, err)
		}
		base := tries()
		got := make(chan error, 1)
		go func() {
			r, err := s.Acquire(ctx, "", leasegate.SemaphoreRequest{Name: name, Owner: "b", TTL: time.Minute, Limit: 1, Wait: 30 * time.Second})
			if err == nil && !r.Acquired {
				err = fmt.Errorf("not acquired: %+v", r)
			}
			got <- err
		}()
		permits := keyspace.Space{Prefix: prefix}.Semaphore("", name).Permits()
		// The confirmation of the SSUBSCRIBE wakes the wait for one
		// re-check (a release before it would have been missed); the
		// release comes after that re-check has answered, so only the
		// release message can wake the wait again.
		redistest.Eventually(t, 10*time.Second, name+": the wait queues, subscribes and re-checks", func() bool {
			return w.QueuedOn(permits) > 0 && shardChannels.Load() == 1 && tries()-base == 2
		})
		before := sharded.Load()
		if res, err := s.Release(ctx, "", name, "a", 0); err != nil || res != leasegate.Released {
			t.Fatalf("%s: release: got %v, %v; want released", name, res, err)
		}
		select {
		case err := <-got:
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s: the wait was not woken by the release", name)
		}
		if after := sharded.Load(); after != before+1 {
			t.Fatalf("%s: sharded messages went from %d to %d, want one more", name, before, after)
		}
	}
}
