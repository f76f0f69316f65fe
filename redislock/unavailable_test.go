package redislock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/redislock"
)

// Every operation, when Redis fails, returns ErrUnavailable and never a
// grant, and nothing is written.
func TestRedisFailureIsUnavailableAndNeverAGrant(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ops := []struct {
		name string
		call func(l *locker) error
	}{
		{"acquire", func(l *locker) error {
			res, err := l.Acquire(ctx, "r", "svc-b", ttl)
			if res.Acquired {
				t.Errorf("acquire: got Acquired true with error %v, want never a grant", err)
			}
			return err
		}},
		{"status", func(l *locker) error { _, err := l.Status(ctx, "r"); return err }},
		{"renew", func(l *locker) error { _, err := l.Renew(ctx, "r", "svc-a", 0, ttl); return err }},
		{"release", func(l *locker) error {
			res, err := l.Release(ctx, "r", "svc-a", 0)
			if res == leasegate.Released {
				t.Errorf("release: got Released with error %v", err)
			}
			return err
		}},
	}

	t.Run("on miniredis answering every command with an error", func(t *testing.T) {
		e := newMiniEngine(t)
		l := newLocker(t, e.RDB, redislock.Config{})
		held := mustAcquire(t, l, "r", "svc-a", ttl)
		e.Mini.SetError("ERR injected outage")
		for _, op := range ops {
			if err := op.call(l); !errors.Is(err, leasegate.ErrUnavailable) {
				t.Errorf("%s: got %v, want ErrUnavailable", op.name, err)
			}
		}
		e.Mini.SetError("")
		if st, err := l.Status(ctx, "r"); err != nil || st != held {
			t.Errorf("after the outage: got %+v, %v; want the lease unchanged %+v", st, err, held)
		}
		if n := e.RDB.Exists(ctx, lockKey(l, "never-written")).Val(); n != 0 {
			t.Errorf("got %d keys, want 0", n)
		}
	})

	t.Run("on a redis-server that has been killed", func(t *testing.T) {
		e := newRealEngine(t)
		// No retries: the test is about the answer, not go-redis's backoff.
		rdb := redis.NewClient(&redis.Options{Addr: e.Server.Addr(), MaxRetries: -1})
		t.Cleanup(func() { _ = rdb.Close() })
		l := newLocker(t, rdb, redislock.Config{})
		mustAcquire(t, l, "r", "svc-a", ttl)
		e.Server.Kill()
		for _, op := range ops {
			if err := op.call(l); !errors.Is(err, leasegate.ErrUnavailable) {
				t.Errorf("%s: got %v, want ErrUnavailable", op.name, err)
			}
		}
	})

	t.Run("on a context that times out", func(t *testing.T) {
		e := newMiniEngine(t)
		l := newLocker(t, e.RDB, redislock.Config{})
		dctx, cancel := context.WithDeadline(ctx, time.Unix(0, 0))
		defer cancel()
		res, err := l.Acquire(dctx, "r", "svc-a", ttl)
		if !errors.Is(err, leasegate.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want ErrUnavailable wrapping context.DeadlineExceeded", err)
		}
		if res.Acquired {
			t.Errorf("got Acquired true, want false")
		}
		if n := e.RDB.Exists(ctx, lockKey(l, "r")).Val(); n != 0 {
			t.Errorf("got %d lock keys, want 0", n)
		}
	})
}

// The scripts run as EVALSHA with an EVAL fallback, so a server that has
// never seen them (or was restarted, or had SCRIPT FLUSH) still works.
func TestScriptsLoadThemselvesAfterScriptFlush(t *testing.T) {
	t.Parallel()
	forEachEngine(t, func(t *testing.T, e *engine) {
		l := newLocker(t, e.RDB, redislock.Config{})
		mustAcquire(t, l, "r", "svc-a", ttl)
		if err := e.RDB.ScriptFlush(context.Background()).Err(); err != nil {
			t.Fatalf("SCRIPT FLUSH: %v", err)
		}
		mustRelease(t, l, "r", "svc-a")
	})
}
