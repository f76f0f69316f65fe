package redislock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/redislock"
)

// firstMessage subscribes to ch, runs act, publishes a marker and returns
// the first payload received: the marker when act published nothing.
func firstMessage(t *testing.T, e *engine, ch string, act func()) string {
	t.Helper()
	ctx := context.Background()
	sub := e.RDB.Subscribe(ctx, ch)
	t.Cleanup(func() { _ = sub.Close() })
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatalf("SUBSCRIBE: %v", err)
	}
	act()
	if err := e.RDB.Publish(ctx, ch, "marker").Err(); err != nil {
		t.Fatalf("PUBLISH: %v", err)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	return msg.Payload
}

func TestReleasePublishesOnlyWhileSomeoneWaits(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		prefix := uniquePrefix(t)
		ch := prefix + "released"
		l := newLocker(t, e.RDB, redislock.Config{Prefix: prefix, ReleaseChannel: ch})
		cycle := func() {
			mustAcquire(t, l, "r", "a", ttl)
			if got, err := l.Release(ctx, "r", "a", 0); err != nil || got != leasegate.Released {
				t.Fatalf("Release: got %v, %v", got, err)
			}
		}
		if got := firstMessage(t, e, ch, cycle); got != "marker" {
			t.Errorf("nobody waits: got %q published first, want nothing before the marker", got)
		}
		mustAcquire(t, l, "r", "holder", ttl)
		if r, err := l.TryAsWaiter(ctx, "r", "waiter", ttl); err != nil || r.Acquired {
			t.Fatalf("contended try: got %+v, %v", r, err)
		}
		release := func() {
			if got, err := l.Release(ctx, "r", "holder", 0); err != nil || got != leasegate.Released {
				t.Fatalf("Release: got %v, %v", got, err)
			}
		}
		if got, want := firstMessage(t, e, ch, release), lockKey(l, "r")+"\nwaiter"; got != want {
			t.Errorf("one waits: got %q first, want the release naming the waiter, %q", got, want)
		}
		if err := l.Leave(ctx, "r", "waiter"); err != nil {
			t.Fatalf("Leave: %v", err)
		}
		if got := firstMessage(t, e, ch, cycle); got != "marker" {
			t.Errorf("the waiter left: got %q published first, want nothing before the marker", got)
		}
		if n, err := e.RDB.Keys(ctx, prefix+"*:waiters").Result(); err != nil || len(n) != 0 {
			t.Errorf("got waiters keys %v, %v after the last waiter left, want none", n, err)
		}
	})
}

// registerWaiter makes a contended try of a waiting acquire by
// "waiter-"+id on resource (held by "holder" for the while), which puts
// it in line.
func registerWaiter(t *testing.T, l *locker, resource, id string) {
	t.Helper()
	ctx := context.Background()
	mustAcquire(t, l, resource, "holder", time.Minute)
	if r, err := l.TryAsWaiter(ctx, resource, "waiter-"+id, time.Minute); err != nil || r.Acquired {
		t.Fatalf("contended try: got %+v, %v", r, err)
	}
	if got, err := l.Release(ctx, resource, "holder", 0); err != nil || got != leasegate.Released {
		t.Fatalf("Release: got %v, %v", got, err)
	}
}

func TestOnlyContendedTriesOfWaitersTakeAPlaceInLine(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		prefix := uniquePrefix(t)
		l := newLocker(t, e.RDB, redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released"})
		if r, err := l.TryAsWaiter(ctx, "free", "a", time.Minute); err != nil || !r.Acquired {
			t.Fatalf("granted try: got %+v, %v; want granted", r, err)
		}
		mustAcquire(t, l, "r", "holder", time.Minute)
		for _, owner := range []string{"waiter-w1", "waiter-w2"} {
			if r, err := l.TryAsWaiter(ctx, "r", owner, time.Minute); err != nil || r.Acquired {
				t.Fatalf("contended try: got %+v, %v", r, err)
			}
		}
		keys, _ := e.RDB.Keys(ctx, prefix+"*:waiters").Result()
		if len(keys) != 1 {
			t.Fatalf("got waiters keys %v, want 1 (none for the granted try)", keys)
		}
		if got := e.RDB.PTTL(ctx, keys[0]).Val(); got <= 0 || got > redislock.TicketLease {
			t.Errorf("got PTTL %v, want the tickets' lease %v at most", got, redislock.TicketLease)
		}
		k := keyspace.Space{Prefix: prefix}.Resource("", "r")
		if got := e.RDB.ZRange(ctx, k.Queue(), 0, -1).Val(); len(got) != 2 || got[0] != "waiter-w1" || got[1] != "waiter-w2" {
			t.Errorf("got line %v, want [waiter-w1 waiter-w2]", got)
		}
	})
}

// TestRegisteredWaiterNoLostWakeUp races a release against a waiting
// acquire through Service, polling off and a
// holder lease far longer than the wait: a wake-up lost between the
// registration and the release leaves the waiter timed out.
func TestRegisteredWaiterNoLostWakeUp(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		prefix := uniquePrefix(t)
		ch := prefix + "released"
		l := wrap(redislock.New(e.RDB, redislock.Config{Prefix: prefix, ReleaseChannel: ch, OpTimeout: time.Second}))
		w := redislock.NewWaiter(e.RDB, redislock.WaiterOptions{Channel: ch, PollInterval: noPoll})
		t.Cleanup(w.Close)
		waitActive(t, w)
		svc := redislock.NewService(l.Locker, w)
		for i := range 100 {
			res := fmt.Sprintf("r%d", i)
			mustAcquire(t, l, res, "holder", time.Hour)
			got := make(chan error, 1)
			go func() {
				r, err := svc.Acquire(context.Background(), "", leasegate.AcquireRequest{Resource: res, Owner: "waiter", TTL: time.Minute, Wait: 5 * time.Second})
				if err == nil && !r.Acquired {
					err = fmt.Errorf("timed out: %+v", r)
				}
				got <- err
			}()
			if rr, err := l.Release(context.Background(), res, "holder", 0); err != nil || rr != leasegate.Released {
				t.Fatalf("release: %v, %v", rr, err)
			}
			if err := <-got; err != nil {
				t.Fatalf("round %d: %v", i, err)
			}
		}
	})
}

// TestAnAcquireWithoutWaitDoesNotJumpTheLine: while a waiter stands in
// line, another owner's acquire without wait is refused even though the
// resource is free; the waiter's own call without wait (a retry after a
// gateway's 503 at shutdown) is granted and uses up its place.
func TestAnAcquireWithoutWaitDoesNotJumpTheLine(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		prefix := uniquePrefix(t)
		l := newLocker(t, e.RDB, redislock.Config{Prefix: prefix})
		registerWaiter(t, l, "r", "w1") // waiter-w1 in line, r free
		res, err := l.Acquire(ctx, "r", "late", time.Minute)
		if err != nil || res.Acquired || res.RetryAfter <= 0 || res.RetryAfter > redislock.TicketLease {
			t.Fatalf("got %+v, %v; want refused with retry_after up to the ticket's lease", res, err)
		}
		mustAcquire(t, l, "r", "waiter-w1", time.Minute)
		k := keyspace.Space{Prefix: prefix}.Resource("", "r")
		if n := e.RDB.Exists(ctx, k.Queue(), k.Waiters()).Val(); n != 0 {
			t.Errorf("got %d line keys after the grant, want none", n)
		}
	})
}
