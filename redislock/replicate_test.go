package redislock_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// primaryWithReplica starts a primary and a replica of it and returns a
// client of each.
func primaryWithReplica(t *testing.T) (primary, replica *redistest.Server, pc, rc *redis.Client) {
	t.Helper()
	primary, replica = redistest.StartReplicated(t)
	return primary, replica, primary.Client(t), replica.Client(t)
}

func replicated(rdb redis.Scripter) *locker {
	return wrap(redislock.New(rdb, redislock.Config{MinReplicas: 1, ReplicaTimeout: time.Second}))
}

func TestMinReplicasOnRealRedis(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// Every case starts Redis servers of its own, so they run at once.

	t.Run("an acknowledged grant is already on the replica when Acquire returns", func(t *testing.T) {
		t.Parallel()
		_, _, pc, rc := primaryWithReplica(t)
		l := replicated(pc)
		for i := 0; i < 20; i++ {
			res := fmt.Sprintf("%s-%d", t.Name(), i)
			got, err := l.Acquire(ctx, res, "a", time.Minute)
			if err != nil || !got.Acquired {
				t.Fatalf("acquire %s: got %+v, %v; want acquired", res, got, err)
			}
			key, _ := l.Keys(res)
			tok, err := rc.HGet(ctx, key, "token").Int64()
			if err != nil || tok != got.Lock.Token {
				t.Fatalf("replica token of %s: got %d (%v), want %d", res, tok, err, got.Lock.Token)
			}
		}
	})

	t.Run("without any replica the grant is undone and the caller told unavailable", func(t *testing.T) {
		t.Parallel()
		pc := redistest.Start(t).Client(t)
		l := replicated(pc)
		res := t.Name()
		_, err := l.Acquire(ctx, res, "a", time.Minute)
		if !errors.Is(err, redislock.ErrNotReplicated) || !errors.Is(err, leasegate.ErrUnavailable) {
			t.Fatalf("acquire: got %v, want ErrNotReplicated wrapping ErrUnavailable", err)
		}
		if _, err := wrap(redislock.New(pc, redislock.Config{})).Status(ctx, res); !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Fatalf("status after undone grant: got %v, want ErrLockNotHeld", err)
		}
	})

	t.Run("a hung replica does not acknowledge, so the grant is undone until it is back", func(t *testing.T) {
		t.Parallel()
		_, replica, pc, _ := primaryWithReplica(t)
		l := replicated(pc)
		plain := wrap(redislock.New(pc, redislock.Config{}))
		res := t.Name()
		replica.Pause()
		_, err := l.Acquire(ctx, res, "a", time.Minute)
		if !errors.Is(err, redislock.ErrNotReplicated) {
			replica.Resume()
			t.Fatalf("acquire with the replica paused: got %v, want ErrNotReplicated", err)
		}
		if _, err := plain.Status(ctx, res); !errors.Is(err, leasegate.ErrLockNotHeld) {
			t.Errorf("status after undone grant: got %v, want ErrLockNotHeld", err)
		}
		replica.Resume()
		got, err := l.Acquire(ctx, res, "a", time.Minute)
		if err != nil || !got.Acquired {
			t.Fatalf("acquire after resume: got %+v, %v; want acquired", got, err)
		}
	})

	// The holder may be working under its lease while it renews by
	// acquiring again (an election's leader campaigning again does):
	// taking the lease away would let another owner in before the holder
	// hears the 503. So it is left as Renew leaves it.
	t.Run("a same-owner re-acquire that is not replicated keeps the lease and its token", func(t *testing.T) {
		t.Parallel()
		_, replica, pc, _ := primaryWithReplica(t)
		l := replicated(pc)
		res := t.Name()
		first, err := l.Acquire(ctx, res, "a", time.Minute)
		if err != nil || !first.Acquired {
			t.Fatalf("acquire: got %+v, %v; want acquired", first, err)
		}
		replica.Pause()
		_, err = l.Acquire(ctx, res, "a", 2*time.Minute)
		replica.Resume()
		if !errors.Is(err, redislock.ErrNotReplicated) {
			t.Fatalf("re-acquire: got %v, want ErrNotReplicated", err)
		}
		got, err := l.Status(ctx, res)
		if err != nil || got.Owner != "a" || got.Token != first.Lock.Token {
			t.Fatalf("status: got %+v, %v; want a's lease under token %d", got, err, first.Lock.Token)
		}
		if other, err := l.Acquire(ctx, res, "b", time.Minute); err != nil || other.Acquired {
			t.Fatalf("another owner's acquire: got %+v, %v; want refused", other, err)
		}
	})

	t.Run("a renew that is not replicated keeps the lease and its token", func(t *testing.T) {
		t.Parallel()
		_, replica, pc, _ := primaryWithReplica(t)
		l := replicated(pc)
		res := t.Name()
		first, err := l.Acquire(ctx, res, "a", time.Minute)
		if err != nil || !first.Acquired {
			t.Fatalf("acquire: got %+v, %v; want acquired", first, err)
		}
		replica.Pause()
		_, err = l.Renew(ctx, res, "a", first.Lock.Token, 2*time.Minute)
		replica.Resume()
		if !errors.Is(err, redislock.ErrNotReplicated) {
			t.Fatalf("renew: got %v, want ErrNotReplicated", err)
		}
		got, err := l.Status(ctx, res)
		if err != nil || got.Token != first.Lock.Token || got.Owner != "a" {
			t.Fatalf("status: got %+v, %v; want owner a with token %d", got, err, first.Lock.Token)
		}
		renewed, err := l.Renew(ctx, res, "a", first.Lock.Token, 2*time.Minute)
		if err != nil || renewed.Token != first.Lock.Token {
			t.Fatalf("renew after resume: got %+v, %v; want token %d", renewed, err, first.Lock.Token)
		}
	})

	t.Run("a contended acquire is answered as usual", func(t *testing.T) {
		t.Parallel()
		_, _, pc, _ := primaryWithReplica(t)
		l := replicated(pc)
		res := t.Name()
		if got, err := l.Acquire(ctx, res, "a", time.Minute); err != nil || !got.Acquired {
			t.Fatalf("acquire: got %+v, %v; want acquired", got, err)
		}
		got, err := l.Acquire(ctx, res, "b", time.Minute)
		if err != nil || got.Acquired || got.Lock.Owner != "a" {
			t.Fatalf("contended acquire: got %+v, %v; want not acquired, held by a", got, err)
		}
	})

	t.Run("a flushed script cache falls back to EVAL inside the pipeline", func(t *testing.T) {
		t.Parallel()
		_, _, pc, _ := primaryWithReplica(t)
		if err := pc.ScriptFlush(ctx).Err(); err != nil {
			t.Fatalf("script flush: %v", err)
		}
		got, err := replicated(pc).Acquire(ctx, t.Name(), "a", time.Minute)
		if err != nil || !got.Acquired {
			t.Fatalf("acquire after SCRIPT FLUSH: got %+v, %v; want acquired", got, err)
		}
	})
}
