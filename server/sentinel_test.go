package server_test

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
	"github.com/leasegate/leasegate/redisconn"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/server"
)

// grant is one acquire the gateway answered "acquired" for.
type grant struct {
	resource string
	token    int64
}

func TestSentinelFailover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	sn := redistest.StartSentinel(t)
	cfg := server.DefaultConfig()
	cfg.Redis.SentinelMaster = sn.MasterName
	cfg.Redis.SentinelAddrs = sn.Addrs()
	cfg.Redis.MinReplicas = 1
	cfg.Redis.MinReplicasTimeout = time.Second
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	rdb, err := redisconn.NewClient(cfg.RedisOptions())
	if err != nil {
		t.Fatalf("NewRedisClient: %v", err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	l := redislock.NewService(redislock.New(rdb, redislock.Config{MinReplicas: 1, ReplicaTimeout: time.Second}), nil)
	owner := "owner-" + t.Name()

	// Before: a few grants, each acknowledged by the replica.
	var mu sync.Mutex
	var granted []grant
	var refused int
	acquire := func(res string) {
		got, err := l.Acquire(ctx, "", leasegate.AcquireRequest{Resource: res, Owner: owner, TTL: 5 * time.Minute})
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err == nil && got.Acquired:
			granted = append(granted, grant{res, got.Lock.Token})
		case err == nil:
			t.Errorf("%s: got not acquired (held by %q), want acquired or an error", res, got.Lock.Owner)
		case errors.Is(err, leasegate.ErrUnavailable):
			refused++ // during the failover: told "no", and that is allowed
		default:
			t.Errorf("%s: got %v, want acquired or ErrUnavailable", res, err)
		}
	}
	for i := 0; i < 20; i++ {
		acquire(fmt.Sprintf("before-%d", i))
	}
	if len(granted) != 20 {
		t.Fatalf("before the failover: got %d grants, want 20", len(granted))
	}

	// During: keep acquiring while Sentinel fails over.
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			acquire(fmt.Sprintf("during-%d", i))
		}
	}()
	newMaster := sn.Failover(t)
	close(stop)
	<-done

	// After: the client follows the new master and locks keep working.
	redistest.Eventually(t, 20*time.Second, "acquire after failover", func() bool {
		got, err := l.Acquire(ctx, "", leasegate.AcquireRequest{Resource: "after-1", Owner: owner, TTL: time.Minute})
		return err == nil && got.Acquired
	})
	if got, err := l.Acquire(ctx, "", leasegate.AcquireRequest{Resource: "after-1", Owner: "someone-else", TTL: time.Minute}); err != nil || got.Acquired {
		t.Fatalf("contended acquire after failover: got %+v, %v; want held by %s", got, err, owner)
	}
	if got, err := l.Release(ctx, "", "after-1", owner, 0); err != nil || got != leasegate.Released {
		t.Fatalf("release after failover: got %v, %v; want released", got, err)
	}

	// No acknowledged grant was lost: each is on the new master, same
	// owner, same token. Read it there directly, not through the client
	// (which could still be reading the old master).
	nm := redis.NewClient(&redis.Options{Addr: newMaster})
	t.Cleanup(func() { _ = nm.Close() })
	onNew := redislock.NewService(redislock.New(nm, redislock.Config{}), nil)
	mu.Lock()
	defer mu.Unlock()
	for _, g := range granted {
		got, err := onNew.Status(ctx, "", g.resource)
		if err != nil || got.Owner != owner || got.Token != g.token {
			t.Errorf("%s on the new master %s: got %+v, %v; want owner %s, token %d", g.resource, newMaster, got, err, owner, g.token)
		}
	}
	t.Logf("%d grants acknowledged (all found on the new master), %d refused during the failover", len(granted), refused)
}
