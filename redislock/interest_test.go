package redislock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
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
		l := newLocker(t, e.RDB, redislock.Options{Prefix: prefix, ReleaseChannel: ch})
		cycle := func() {
			mustAcquire(t, l, "r", "a", ttl)
			if got, err := l.Release(ctx, "r", "a", 0); err != nil || got != leasegate.Released {
				t.Fatalf("Release: got %v, %v", got, err)
			}
		}
		if got := firstMessage(t, e, ch, cycle); got != "marker" {
			t.Errorf("nobody waits: got %q published first, want nothing before the marker", got)
		}
		reg := registerWaiter(t, l, "r", "w1", time.Minute)
		if got, want := firstMessage(t, e, ch, cycle), lockKey(l, "r"); got != want {
			t.Errorf("one waits: got %q first, want the release %q", got, want)
		}
		if err := l.Leave(ctx, "r", reg); err != nil {
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

// registerWaiter makes a contended try of a waiting acquire on resource
// (held by "holder" for the while), which registers it.
func registerWaiter(t *testing.T, l *locker, resource, id string, ttl time.Duration) *redislock.Registration {
	t.Helper()
	ctx := context.Background()
	mustAcquire(t, l, resource, "holder", time.Minute)
	reg := redislock.NewRegistration(id, ttl)
	if r, err := l.TryAsWaiter(ctx, resource, "waiter-"+id, time.Minute, reg); err != nil || r.Acquired {
		t.Fatalf("contended try: got %+v, %v", r, err)
	}
	if !reg.Registered() {
		t.Fatal("a contended try did not register")
	}
	if got, err := l.Release(ctx, resource, "holder", 0); err != nil || got != leasegate.Released {
		t.Fatalf("Release: got %v, %v", got, err)
	}
	return reg
}

func TestWaitersEntriesLiveForTheLongestWaiterAndOnlyContendedTriesRegister(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		ctx := context.Background()
		prefix := uniquePrefix(t)
		l := newLocker(t, e.RDB, redislock.Options{Prefix: prefix, ReleaseChannel: prefix + "released"})
		free := redislock.NewRegistration("w0", time.Hour)
		if r, err := l.TryAsWaiter(ctx, "free", "a", time.Minute, free); err != nil || !r.Acquired || free.Registered() {
			t.Fatalf("granted try: got %+v, %v, registered %v; want granted, not registered", r, err, free.Registered())
		}
		registerWaiter(t, l, "r", "w1", time.Hour)
		registerWaiter(t, l, "r", "w2", time.Minute)
		keys, _ := e.RDB.Keys(ctx, prefix+"*:waiters").Result()
		if len(keys) != 1 {
			t.Fatalf("got waiters keys %v, want 1", keys)
		}
		if got := e.RDB.PTTL(ctx, keys[0]).Val(); got <= time.Minute {
			t.Errorf("got PTTL %v, want the longer waiter's hour kept", got)
		}
		if got := e.RDB.HLen(ctx, keys[0]).Val(); got != 2 {
			t.Errorf("got %d waiters, want 2", got)
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
		l := wrap(redislock.New(e.RDB, redislock.Options{Prefix: prefix, ReleaseChannel: ch}))
		w := redislock.NewWaiter(e.RDB, redislock.WaiterOptions{Channel: ch, PollInterval: noPoll})
		t.Cleanup(w.Close)
		waitActive(t, w)
		svc := redislock.NewService(l.Locker, w, time.Second)
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
