package redislock_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/redislock"
)

// shardGateway is one gateway's lock engine on a Redis Cluster: its own
// cluster client, a Locker and a Waiter, sharded or classic.
// waiterCounts counts what a Waiter reports through its callbacks: the
// release messages received and the shard channels confirmed.
type waiterCounts struct {
	classic, sharded, shards atomic.Int64
}

func (c *waiterCounts) hook(o redislock.WaiterOptions) redislock.WaiterOptions {
	o.OnMessage = func(sharded bool) {
		if sharded {
			c.sharded.Add(1)
		} else {
			c.classic.Add(1)
		}
	}
	o.OnShardChannels = func(n int) { c.shards.Store(int64(n)) }
	return o
}

func (c *waiterCounts) received() (classic, sharded int64) { return c.classic.Load(), c.sharded.Load() }

func (c *waiterCounts) shardChannels() int64 { return c.shards.Load() }

type shardGateway struct {
	n   *waiterCounts
	rc  *redis.ClusterClient
	l   *locker
	w   *redislock.Waiter
	svc *redislock.Service
}

func newShardGateway(t testing.TB, cl *redistest.Cluster, prefix string, sharded bool) *shardGateway {
	t.Helper()
	rc := cl.Client(t)
	channel := prefix + "released"
	opts := redislock.WaiterOptions{Channel: channel, PollInterval: noPoll}
	if sharded {
		opts.Shards = rc
	}
	n := &waiterCounts{}
	opts = n.hook(opts)
	g := &shardGateway{
		n:  n,
		rc: rc,
		l: wrap(redislock.New(rc, redislock.Config{Prefix: prefix, ReleaseChannel: channel,
			ShardedReleases: sharded})),
		w: redislock.NewWaiter(rc, opts),
	}
	g.svc = redislock.NewService(g.l.Locker, g.w)
	t.Cleanup(g.w.Close)
	redistest.Eventually(t, 10*time.Second, "the waiter subscribes", g.w.Active)
	return g
}

// wait starts a waiting acquire through the Service (which registers it
// among the resource's waiters, so the release publishes).
func (g *shardGateway) wait(resource, owner string, wait time.Duration) <-chan waitOutcome {
	ch := make(chan waitOutcome, 1)
	go func() {
		res, err := g.svc.Acquire(context.Background(), "", leasegate.AcquireRequest{
			Resource: resource, Owner: owner, TTL: time.Minute, Wait: wait})
		ch <- waitOutcome{res: res, err: err, at: time.Now()}
	}()
	return ch
}

// TestShardedWakeUpsOnRealCluster: on Redis Cluster >= 7 a release
// SPUBLISHes on its resource's shard channel; the gateway that waits
// subscribed it on the slot's master and is woken by the message (the
// lease has a minute left and polling is off, so nothing else wakes it
// within the bound); a gateway with no waiter receives nothing. With
// classic PUBLISH, the same release reaches the idle gateway too.
func TestShardedWakeUpsOnRealCluster(t *testing.T) {
	t.Parallel()
	cl := redistest.StartCluster(t, 3)
	prefix := uniquePrefix(t)
	a := newShardGateway(t, cl, prefix, true)
	b := newShardGateway(t, cl, prefix, true)

	t.Run("a waiting acquire is woken by SPUBLISH on every master", func(t *testing.T) {
		masters := map[string]bool{}
		tries := redistest.ScriptsBy(a.rc, "waiter")
		for _, res := range clusterNames("sharded")[12:24] {
			lock, _ := a.l.Keys(res)
			masters[masterOf(t, a.rc, lock)] = true
			mustAcquire(t, a.l, res, "holder", time.Minute)
			_, before := a.n.received()
			base := tries()
			out := a.wait(res, "waiter", 30*time.Second)
			// The confirmation of the SSUBSCRIBE wakes the waiter for one
			// re-check (a release before it would have been missed); the
			// release comes after that re-check has answered, so only the
			// release message can wake the waiter again.
			redistest.Eventually(t, 10*time.Second, "waiter queued, its shard channel subscribed and re-checked", func() bool {
				return a.w.QueuedOn(lock) == 1 && a.n.shardChannels() == 1 && tries()-base == 2
			})
			mustRelease(t, a.l, res, "holder")
			got := receive(t, out, 5*time.Second)
			if got.err != nil || !got.res.Acquired || got.res.Lock.Owner != "waiter" {
				t.Fatalf("%q: got %+v, %v; want acquired by waiter after the release", res, got.res, got.err)
			}
			if _, after := a.n.received(); after != before+1 {
				t.Fatalf("%q: sharded messages went from %d to %d, want one more", res, before, after)
			}
			redistest.Eventually(t, 10*time.Second, "shard channel unsubscribed once nobody waits", func() bool {
				return a.n.shardChannels() == 0
			})
			mustRelease(t, a.l, res, "waiter")
		}
		if len(masters) != 3 {
			t.Fatalf("resources landed on %d masters, want all 3", len(masters))
		}
		if classic, sharded := a.n.received(); classic != 0 || sharded != 12 {
			t.Errorf("waiting gateway received %d classic and %d sharded messages, want 0 and 12", classic, sharded)
		}
		if classic, sharded := b.n.received(); classic != 0 || sharded != 0 {
			t.Errorf("gateway without waiters received %d classic and %d sharded messages, want none", classic, sharded)
		}
	})

	t.Run("a tenant's release through the Service wakes the tenant's waiter", func(t *testing.T) {
		// The release publishes on the shard channel of the tenant's
		// resource (its slot), not the default tenant's: a channel of
		// another slot would be refused by Redis Cluster inside the script.
		ctx := context.Background()
		for _, res := range clusterNames("tenant")[:6] {
			held, err := a.svc.Acquire(ctx, "acme", leasegate.AcquireRequest{Resource: res, Owner: "holder", TTL: time.Minute})
			if err != nil || !held.Acquired {
				t.Fatalf("%q: acquire: got %+v, %v", res, held, err)
			}
			out := make(chan waitOutcome, 1)
			go func() {
				r, err := a.svc.Acquire(ctx, "acme", leasegate.AcquireRequest{Resource: res, Owner: "waiter", TTL: time.Minute, Wait: 30 * time.Second})
				out <- waitOutcome{res: r, err: err, at: time.Now()}
			}()
			redistest.Eventually(t, 10*time.Second, "the tenant's waiter queued and subscribed", func() bool {
				return a.svc.Queued("acme", res) == 1 && a.n.shardChannels() == 1
			})
			if _, err := a.svc.Release(ctx, "acme", res, "holder", held.Lock.Token); err != nil {
				t.Fatalf("%q: release: %v", res, err)
			}
			got := receive(t, out, 5*time.Second)
			if got.err != nil || !got.res.Acquired || got.res.Lock.Owner != "waiter" {
				t.Fatalf("%q: got %+v, %v; want acquired by waiter after the release", res, got.res, got.err)
			}
			if _, err := a.svc.Release(ctx, "acme", res, "waiter", got.res.Lock.Token); err != nil {
				t.Fatalf("%q: release: %v", res, err)
			}
			redistest.Eventually(t, 10*time.Second, "shard channel unsubscribed", func() bool { return a.n.shardChannels() == 0 })
		}
	})

	t.Run("a forced release and a watcher are woken by SPUBLISH", func(t *testing.T) {
		ctx := context.Background()
		o := redislock.NewOperator(a.rc, a.l.Locker, a.w, redislock.OperatorOptions{WatchPoll: time.Hour})
		res := "forced"
		lock, _ := a.l.Keys(res)
		mustAcquire(t, a.l, res, "holder", time.Minute)
		events := make(chan leasegate.LockEvent, 8)
		wctx, stop := context.WithCancel(ctx)
		watched := make(chan error, 1)
		go func() { watched <- o.Watch(wctx, "", res, events) }()
		t.Cleanup(func() { stop(); <-watched })
		if ev := <-events; ev.Kind != leasegate.EventState {
			t.Fatalf("first event: got %v, want state", ev.Kind)
		}
		// The watcher's channel is confirmed before the waiter comes, so
		// the waiter joins a subscription already listening and makes
		// one try; the release comes after it has answered, so only the
		// release message can wake the waiter.
		redistest.Eventually(t, 10*time.Second, "the watcher's channel subscribed", func() bool {
			return a.n.shardChannels() == 1
		})
		tries := redistest.ScriptsBy(a.rc, "waiter")
		out := a.wait(res, "waiter", 30*time.Second)
		redistest.Eventually(t, 10*time.Second, "waiter queued after one try", func() bool {
			return a.w.QueuedOn(lock) == 1 && tries() == 1
		})
		_, before := a.n.received()
		if _, err := o.ForceRelease(ctx, "", res, "test", leasegate.RequestMeta{}); err != nil {
			t.Fatalf("ForceRelease: %v", err)
		}
		if got := receive(t, out, 5*time.Second); got.err != nil || !got.res.Acquired {
			t.Fatalf("got %+v, %v; want acquired after the forced release", got.res, got.err)
		}
		select {
		case ev := <-events:
			if ev.Kind != leasegate.EventForceReleased {
				t.Fatalf("watcher: got %v, want force-released", ev.Kind)
			}
		case <-time.After(5 * time.Second):
			t.Fatal("the watcher was not woken by the forced release")
		}
		if _, after := a.n.received(); after != before+1 {
			t.Fatalf("sharded messages went from %d to %d, want one more (one per release, however many listen)", before, after)
		}
		mustRelease(t, a.l, res, "waiter")
	})

	t.Run("with classic PUBLISH the idle gateway hears every release", func(t *testing.T) {
		p := uniquePrefix(t)
		ca := newShardGateway(t, cl, p, false)
		cb := newShardGateway(t, cl, p, false)
		mustAcquire(t, ca.l, "r", "holder", time.Minute)
		out := ca.wait("r", "waiter", 30*time.Second)
		lock, _ := ca.l.Keys("r")
		redistest.Eventually(t, 10*time.Second, "waiter queued", func() bool { return ca.w.QueuedOn(lock) == 1 })
		mustRelease(t, ca.l, "r", "holder")
		if got := receive(t, out, 5*time.Second); got.err != nil || !got.res.Acquired {
			t.Fatalf("got %+v, %v; want acquired", got.res, got.err)
		}
		redistest.Eventually(t, 10*time.Second, "the idle gateway's message", func() bool {
			c, _ := cb.n.received()
			return c == 1
		})
	})
}

// TestShardedWaitFollowsItsSlot: a wait's shard subscription survives a
// slot moving to another master (the old one pushes sunsubscribe; the
// Waiter subscribes again where the slot went) and a restart of the
// master that serves it (the subscription is lost and opened again). The
// try never reports a release of its own, so only the message wakes it.
func TestShardedWaitFollowsItsSlot(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cl := redistest.StartCluster(t, 3)
	rc := cl.Client(t)
	counts := &waiterCounts{}
	w := redislock.NewWaiter(rc, counts.hook(redislock.WaiterOptions{Shards: rc, PollInterval: noPoll, HealthInterval: time.Second}))
	t.Cleanup(w.Close)
	sem := keyspace.Space{Prefix: uniquePrefix(t)}.Semaphore("", "slot")
	key, channel := sem.Permits(), sem.Released()
	slot, err := rc.ClusterKeySlot(ctx, channel).Result()
	if err != nil {
		t.Fatal(err)
	}

	var free atomic.Bool
	var tries atomic.Int64
	done := make(chan error, 1)
	go func() {
		ok, _, err := w.WaitFor(ctx, redislock.WaitOptions{Key: key, Channel: channel, Wait: time.Minute},
			func(context.Context, time.Duration) (bool, time.Duration, error) {
				tries.Add(1)
				return free.Load(), time.Hour, nil
			})
		if err == nil && !ok {
			err = fmt.Errorf("wait ended without the release")
		}
		done <- err
	}()
	subscribed := func(what string) {
		t.Helper()
		redistest.Eventually(t, 20*time.Second, what, func() bool { return counts.shardChannels() == 1 })
	}
	// wake publishes a release until the Waiter hears one (the cluster
	// client may need a moment to learn a moved slot).
	wake := func(what string) {
		t.Helper()
		_, before := counts.received()
		redistest.Eventually(t, 20*time.Second, what, func() bool {
			_ = rc.SPublish(ctx, channel, key).Err()
			_, after := counts.received()
			return after > before
		})
	}
	subscribed("subscribed at first")

	t.Run("a moved slot is subscribed again on its new master", func(t *testing.T) {
		owner := masterOf(t, rc, channel)
		var to *redistest.Server
		for _, n := range cl.Nodes {
			if n.Addr() != owner {
				to = n
				break
			}
		}
		n := tries.Load()
		cl.MoveSlot(t, int(slot), to)
		// The old master's sunsubscribe wakes the head to re-check.
		redistest.Eventually(t, 20*time.Second, "unsubscribed by the old master", func() bool { return tries.Load() > n })
		subscribed("subscribed on the new master")
		rc.ReloadState(ctx)
		wake("a release after the move is heard")
	})

	t.Run("a restarted master is subscribed again", func(t *testing.T) {
		owner := masterOf(t, rc, channel)
		var node *redistest.Server
		for _, n := range cl.Nodes {
			if n.Addr() == owner {
				node = n
			}
		}
		n := tries.Load()
		node.Restart()
		// The lost subscription wakes the head to re-check.
		redistest.Eventually(t, 20*time.Second, "the subscription noticed the restart", func() bool { return tries.Load() > n })
		subscribed("subscribed again after the restart")
		wake("a release after the restart is heard")
	})

	n := tries.Load()
	free.Store(true)
	if err := rc.SPublish(ctx, channel, key).Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the wait was not woken by the release (tries: %d before, %d now)", n, tries.Load())
	}
}

// BenchmarkClusterWakeUpAfterRelease measures release -> the waiter holds
// the lock on a 3-master cluster, sharded and classic, and (sharded) how
// long a new waiter's shard channel takes to be confirmed
// (subscribe-µs/op, outside the timed part).
func BenchmarkClusterWakeUpAfterRelease(b *testing.B) {
	cl := redistest.StartCluster(b, 3)
	for _, sharded := range []bool{true, false} {
		name := "classic"
		if sharded {
			name = "sharded"
		}
		b.Run(name, func(b *testing.B) {
			g := newShardGateway(b, cl, fmt.Sprintf("bench%d:", time.Now().UnixNano()), sharded)
			ctx := context.Background()
			var subscribe time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				res := fmt.Sprint("bench-", i)
				lock, _ := g.l.Keys(res)
				if _, err := g.l.Acquire(ctx, res, "holder", time.Minute); err != nil {
					b.Fatal(err)
				}
				start := time.Now()
				out := g.wait(res, "waiter", 10*time.Second)
				for g.w.QueuedOn(lock) == 0 || (sharded && g.n.shardChannels() == 0) {
					time.Sleep(50 * time.Microsecond)
				}
				subscribe += time.Since(start)
				b.StartTimer()
				if _, err := g.l.Release(ctx, res, "holder", 0); err != nil {
					b.Fatal(err)
				}
				if o := <-out; o.err != nil || !o.res.Acquired {
					b.Fatalf("got %+v, %v; want acquired", o.res, o.err)
				}
			}
			if sharded {
				b.ReportMetric(float64(subscribe.Microseconds())/float64(b.N), "subscribe-µs/op")
			}
		})
	}
}
