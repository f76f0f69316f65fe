package redislock_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/redislock"
)

// TestAWatcherSeesAnExpiryWithoutPolling: an expiry publishes nothing, so
// a watcher that never polls (WatchPoll an hour) learns of it from its
// own timer at expires_at plus the margin.
func TestAWatcherSeesAnExpiryWithoutPolling(t *testing.T) {
	t.Parallel()
	e := newRealEngine(t)
	prefix := uniquePrefix(t)
	l := newLocker(t, e.RDB, redislock.Config{Prefix: prefix, ReleaseChannel: prefix + "released"})
	w := redislock.NewWaiter(e.RDB, redislock.WaiterOptions{Channel: prefix + "released"})
	t.Cleanup(w.Close)
	o := redislock.NewOperator(e.RDB, l.Locker, w, redislock.OperatorOptions{WatchPoll: time.Hour})

	lk := mustAcquire(t, l, "r", "short", time.Second)
	events := make(chan leasegate.LockEvent, 8)
	ctx, stop := context.WithCancel(context.Background())
	watched := make(chan error, 1)
	go func() { watched <- o.Watch(ctx, "", "r", events) }()
	t.Cleanup(func() { stop(); <-watched })

	next := func(want leasegate.LockEventKind) leasegate.LockEvent {
		t.Helper()
		select {
		case ev := <-events:
			if ev.Kind != want || ev.Lock == nil || ev.Lock.Token != lk.Token {
				t.Fatalf("got %v of %+v, want %v of token %d", ev.Kind, ev.Lock, want, lk.Token)
			}
			return ev
		case <-time.After(10 * time.Second):
			t.Fatalf("no %v event within 10s (polling is an hour away)", want)
			return leasegate.LockEvent{}
		}
	}
	next(leasegate.EventState)
	ev := next(leasegate.EventExpired)
	if ev.At.Before(lk.ExpiresAt) {
		t.Errorf("expired reported at %v, before expires_at %v", ev.At, lk.ExpiresAt)
	}
}
