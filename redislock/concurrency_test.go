package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// race runs n acquires of resource, each by its own owner, released at
// once by one closed channel, and returns every result.
func race(t *testing.T, l *locker, resource string, n int) []leasegate.AcquireResult {
	t.Helper()
	start := make(chan struct{})
	results := make([]leasegate.AcquireResult, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			<-start
			results[i], errs[i] = l.Acquire(context.Background(), resource, fmt.Sprintf("owner-%03d", i), ttl)
		}(i)
	}
	close(start)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("acquires failed: %v", err)
	}
	return results
}

// checkOneWinner asserts exactly one result acquired and every loser was
// shown the winner's lease, which is what Redis now holds.
func checkOneWinner(t *testing.T, l *locker, resource string, results []leasegate.AcquireResult) leasegate.Lock {
	t.Helper()
	var winners []leasegate.Lock
	for _, r := range results {
		if r.Acquired {
			winners = append(winners, r.Lock)
		}
	}
	if len(winners) != 1 {
		t.Fatalf("got %d winners, want exactly 1: %+v", len(winners), winners)
	}
	w := winners[0]
	for _, r := range results {
		if !r.Acquired && r.Lock != w {
			t.Errorf("a loser was shown holder %+v, want the winner %+v", r.Lock, w)
		}
	}
	st, err := l.Status(context.Background(), resource)
	if err != nil || st != w {
		t.Errorf("got status %+v, %v; want the winner %+v", st, err, w)
	}
	return w
}

// bigPool gives every goroutine its own connection, so the acquires
// really are concurrent on the server.
func bigPool(t *testing.T, e *engine) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{Addr: e.RDB.Options().Addr, PoolSize: 128})
	t.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

func TestConcurrentAcquiresOfAFreeResourceHaveOneWinner(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		l := newLocker(t, bigPool(t, e), redislock.Config{})
		checkOneWinner(t, l, "free", race(t, l, "free", 100))
	})
}

func TestConcurrentTakeoversOfAnExpiredLeaseHaveOneWinner(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		for _, unreaped := range []bool{false, true} {
			name := "once Redis has reaped the key"
			if unreaped {
				name = "while the expired key is still in Redis (the seed's UPDATE race)"
			}
			t.Run(name, func(t *testing.T) {
				l := newLocker(t, bigPool(t, e), redislock.Config{})
				old := mustAcquire(t, l, "stale", "old-owner", e.stale)
				if unreaped {
					keepKey(t, e, l, "stale")
				}
				e.Advance(t, e.stale+time.Millisecond)
				waitNotHeld(t, l, "stale")
				if unreaped {
					if n := e.RDB.Exists(context.Background(), lockKey(l, "stale")).Val(); n != 1 {
						t.Fatalf("got %d lock keys, want the expired key still there", n)
					}
				}
				w := checkOneWinner(t, l, "stale", race(t, l, "stale", 50))
				if w.Token <= old.Token {
					t.Errorf("got winner token %d, want above the expired lease's %d", w.Token, old.Token)
				}
			})
		}
	})
}

// waitNotHeld polls Status until the lease is gone, with a deadline: the
// signal that expiry has happened on the server's clock.
func waitNotHeld(t *testing.T, l *locker, resource string) {
	t.Helper()
	redistest.Eventually(t, 10*time.Second, fmt.Sprintf("lease on %q gone", resource), func() bool {
		_, err := l.Status(context.Background(), resource)
		if err != nil && !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Fatalf("Status: %v", err)
		}
		return errors.Is(err, leasegate.ErrLockNotHeld)
	})
}
