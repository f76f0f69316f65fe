package redislock_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/redislock"
)

// BenchmarkIndexCost is an acquire and a release of one resource, with and
// without the lock index (docs/benchmarks.md, "Operator tools"). Each
// acquire is a new grant, so each pays the index's ZADD.
func BenchmarkIndexCost(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		mode redislock.IndexMode
	}{{"index off", redislock.IndexOff}, {"index in script", redislock.IndexInScript}, {"index second step", redislock.IndexSecondStep}} {
		b.Run(c.name, func(b *testing.B) {
			l := redislock.New(rdb, redislock.Options{Prefix: "bench-" + strconv.Itoa(int(c.mode)) + ":", Index: c.mode})
			b.ReportAllocs()
			for b.Loop() {
				if res, err := l.Acquire(ctx, "r", "o", time.Minute); err != nil || !res.Acquired {
					b.Fatalf("Acquire: %+v %v", res, err)
				}
				if _, err := l.Release(ctx, "r", "o", 0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkListWithAMillionLeases lists pages of a tenant that holds
// 1,000,000 live leases. It fills a redis-server first (about 200 MB, a
// minute), so it runs only with LEASEGATE_BENCH_1M=1:
//
//	LEASEGATE_BENCH_1M=1 go test -run '^$' -bench ListWithAMillion -benchtime 2000x ./redislock/
func BenchmarkListWithAMillionLeases(b *testing.B) {
	if os.Getenv("LEASEGATE_BENCH_1M") == "" {
		b.Skip("set LEASEGATE_BENCH_1M=1 to fill a Redis with 1,000,000 leases")
	}
	const n = 1_000_000
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	ctx := context.Background()
	space := keyspace.Space{Prefix: "m:"}
	exp := time.Now().Add(time.Hour).UnixMilli()
	for i := 0; i < n; i += 10000 {
		_, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			z := make([]redis.Z, 0, 10000)
			for j := i; j < i+10000; j++ {
				r := fmt.Sprintf("order-%07d", j)
				k := space.Resource("t", r).Lock()
				p.HSet(ctx, k, "owner", "worker", "token", strconv.Itoa(j+1), "acquired_at", strconv.FormatInt(exp-3600000, 10), "expires_at", strconv.FormatInt(exp, 10))
				p.PExpireAt(ctx, k, time.UnixMilli(exp))
				z = append(z, redis.Z{Member: r})
			}
			p.ZAdd(ctx, space.LockIndex("t"), z...)
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	w := redislock.NewWaiter(nil, redislock.WaiterOptions{})
	l := redislock.New(rdb, redislock.Options{Prefix: "m:", PublishOnlyToWaiters: true, ReleaseChannel: "m:released"})
	o := redislock.NewOperator(rdb, l, w, redislock.OperatorOptions{})
	for _, limit := range []int{100, 1000} {
		b.Run(fmt.Sprintf("page of %d", limit), func(b *testing.B) {
			i := 0
			for b.Loop() {
				// A different place in the index each time: a cursor.
				cursor := fmt.Sprintf("order-%07d", (i*7919)%(n-limit))
				p, err := o.List(ctx, "t", "order-", cursor, limit)
				if err != nil || len(p.Items) != limit {
					b.Fatalf("List: %d items, %v", len(p.Items), err)
				}
				i++
			}
		})
	}
	b.Run("prefix search, page of 100", func(b *testing.B) {
		i := 0
		for b.Loop() {
			p, err := o.List(ctx, "t", fmt.Sprintf("order-0%03d", i%1000), "", 100)
			if err != nil || len(p.Items) != 100 {
				b.Fatalf("List: %d items, %v", len(p.Items), err)
			}
			i++
		}
	})
}
