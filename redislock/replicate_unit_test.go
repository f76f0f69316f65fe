package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/redislock"
)

// miniredis has no WAIT: it answers an error, which a replicated Locker
// must treat as "not acknowledged", never as a grant.
func TestMinReplicasWhenWaitFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	m := miniredis.RunT(t)
	m.SetTime(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC))
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	l := wrap(redislock.New(rdb, redislock.Config{MinReplicas: 1}))
	plain := wrap(redislock.New(rdb, redislock.Config{}))

	t.Run("an acquire is undone and reported unavailable", func(t *testing.T) {
		res := t.Name()
		_, err := l.Acquire(ctx, res, "a", time.Minute)
		if !errors.Is(err, redislock.ErrNotReplicated) || !errors.Is(err, leasegate.ErrUnavailable) {
			t.Fatalf("acquire: got %v, want ErrNotReplicated wrapping ErrUnavailable", err)
		}
		if _, err := plain.Status(ctx, res); !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Fatalf("status: got %v, want ErrLockNotHeld", err)
		}
	})

	t.Run("a same-owner re-acquire is reported unavailable and the lease kept", func(t *testing.T) {
		res := t.Name()
		first, err := plain.Acquire(ctx, res, "a", time.Minute)
		if err != nil || !first.Acquired {
			t.Fatalf("acquire: got %+v, %v; want acquired", first, err)
		}
		if _, err := l.Acquire(ctx, res, "a", time.Minute); !errors.Is(err, redislock.ErrNotReplicated) {
			t.Fatalf("re-acquire: got %v, want ErrNotReplicated", err)
		}
		got, err := plain.Status(ctx, res)
		if err != nil || got.Token != first.Lock.Token || got.Owner != "a" {
			t.Fatalf("status: got %+v, %v; want a's lease under token %d", got, err, first.Lock.Token)
		}
	})

	t.Run("a renew is reported unavailable and the lease kept", func(t *testing.T) {
		res := t.Name()
		first, err := plain.Acquire(ctx, res, "a", time.Minute)
		if err != nil || !first.Acquired {
			t.Fatalf("acquire: got %+v, %v; want acquired", first, err)
		}
		if _, err := l.Renew(ctx, res, "a", 0, time.Minute); !errors.Is(err, redislock.ErrNotReplicated) {
			t.Fatalf("renew: got %v, want ErrNotReplicated", err)
		}
		got, err := plain.Status(ctx, res)
		if err != nil || got.Token != first.Lock.Token {
			t.Fatalf("status: got %+v, %v; want token %d", got, err, first.Lock.Token)
		}
	})

	t.Run("a refused or not-held answer is returned as it is", func(t *testing.T) {
		res := t.Name()
		if _, err := plain.Acquire(ctx, res, "a", time.Minute); err != nil {
			t.Fatalf("acquire: %v", err)
		}
		got, err := l.Acquire(ctx, res, "b", time.Minute)
		if err != nil || got.Acquired {
			t.Fatalf("contended acquire: got %+v, %v; want not acquired, no error", got, err)
		}
		if _, err := l.Renew(ctx, res, "b", 0, time.Minute); !errors.Is(err, leasegate.ErrLockForbidden) {
			t.Fatalf("renew by b: got %v, want ErrLockForbidden", err)
		}
		if _, err := l.Renew(ctx, res+"-none", "a", 0, time.Minute); !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Fatalf("renew of nothing: got %v, want ErrLockNotHeld", err)
		}
	})

	t.Run("Redis down is unavailable with nothing granted", func(t *testing.T) {
		m.SetError("LOADING going down")
		defer m.SetError("")
		_, err := l.Acquire(ctx, t.Name(), "a", time.Minute)
		if !errors.Is(err, leasegate.ErrUnavailable) || errors.Is(err, redislock.ErrNotReplicated) {
			t.Fatalf("acquire: got %v, want ErrUnavailable (not a replication error)", err)
		}
	})
}
