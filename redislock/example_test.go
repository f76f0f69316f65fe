package redislock_test

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/redislock"
)

func Example() {
	// An in-memory Redis with a fixed clock, so the output is exact. Use a
	// *redis.Client (or ClusterClient) on a real Redis in production.
	m, _ := miniredis.Run()
	defer m.Close()
	m.SetTime(time.Date(2026, 11, 30, 9, 30, 0, 0, time.UTC))
	rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
	defer rdb.Close()

	ctx := context.Background()
	// The Service is the engine's API; nil: waits notice releases by polling.
	locks := redislock.NewService(redislock.New(rdb, redislock.Config{}), nil)
	const tenant = ""

	a, _ := locks.Acquire(ctx, tenant, leasegate.AcquireRequest{Resource: "daily-report", Owner: "node-a", TTL: 30 * time.Second})
	fmt.Println("node-a acquired:", a.Acquired, "token:", a.Lock.Token, "until", a.Lock.ExpiresAt.Format(time.RFC3339))

	b, _ := locks.Acquire(ctx, tenant, leasegate.AcquireRequest{Resource: "daily-report", Owner: "node-b", TTL: 30 * time.Second})
	fmt.Println("node-b acquired:", b.Acquired, "retry after:", b.RetryAfter)

	res, _ := locks.Release(ctx, tenant, "daily-report", "node-b", 0)
	fmt.Println("node-b release:", res)

	res, _ = locks.Release(ctx, tenant, "daily-report", "node-a", a.Lock.Token)
	fmt.Println("node-a release:", res)

	c, _ := locks.Acquire(ctx, tenant, leasegate.AcquireRequest{Resource: "daily-report", Owner: "node-b", TTL: 30 * time.Second})
	fmt.Println("node-b acquired:", c.Acquired, "token:", c.Lock.Token, "higher:", c.Lock.Token > a.Lock.Token)

	// Output:
	// node-a acquired: true token: 1796031000000000 until 2026-11-30T09:30:30Z
	// node-b acquired: false retry after: 30s
	// node-b release: forbidden
	// node-a release: released
	// node-b acquired: true token: 1796031000000001 higher: true
}
