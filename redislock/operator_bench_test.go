package redislock_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/redislock"
)

// BenchmarkIndexCost is an acquire and a release of one resource, with the
// lock index of each deployment kind (docs/benchmarks.md, "Operator tools"). Each
// acquire is a new grant, so each pays the index's ZADD.
func BenchmarkIndexCost(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	ctx := context.Background()
	for i, c := range []struct {
		name       string
		secondStep bool
	}{{"index in script", false}, {"index second step", true}} {
		b.Run(c.name, func(b *testing.B) {
			l := redislock.New(rdb, redislock.Config{Prefix: "bench-" + strconv.Itoa(i) + ":"})
			if c.secondStep {
				l = redislock.SecondStepIndex(l)
			}
			svc := redislock.NewService(l, nil)
			b.ReportAllocs()
			reportRedisCost(b, rdb, func() {
				if res, err := svc.Acquire(ctx, "", leasegate.AcquireRequest{Resource: "r", Owner: "o", TTL: time.Minute}); err != nil || !res.Acquired {
					b.Fatalf("Acquire: %+v %v", res, err)
				}
				if _, err := svc.Release(ctx, "", "r", "o", 0); err != nil {
					b.Fatal(err)
				}
			})
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
	if mem, err := rdb.MemoryUsage(ctx, space.LockIndex("t"), 0).Result(); err == nil {
		b.Logf("the index of %d leases takes %d bytes (%.1f a lease)", n, mem, float64(mem)/n)
	}
	w := redislock.NewWaiter(nil, redislock.WaiterOptions{})
	l := wrap(redislock.New(rdb, redislock.Config{Prefix: "m:", ReleaseChannel: "m:released"}))
	o := redislock.NewOperator(rdb, l.Locker, w, redislock.OperatorOptions{})
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

// reportRedisCost runs cycle once per b.Loop iteration on freshly reset
// Redis statistics, then reports the commands and the Redis time of one
// cycle (see commandstats).
func reportRedisCost(b *testing.B, rdb *redis.Client, cycle func()) {
	b.Helper()
	if err := rdb.ConfigResetStat(context.Background()).Err(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		cycle()
	}
	calls, usec := commandstats(b, rdb)
	b.ReportMetric(calls/float64(b.N), "redis-cmds/cycle")
	b.ReportMetric(usec/float64(b.N), "redis-µs/cycle")
}

// commandstats sums INFO commandstats: calls and usec of every command
// except the scripts themselves (evalsha, eval), whose usec include the
// commands they run; those are added as their own usec minus nothing, so
// usec is Redis's time for the scripts in all.
func commandstats(b *testing.B, rdb *redis.Client) (calls, usec float64) {
	b.Helper()
	info, err := rdb.Info(context.Background(), "commandstats").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") || name == "cmdstat_info" || name == "cmdstat_config|resetstat" {
			continue
		}
		var c, u float64
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			f, _ := strconv.ParseFloat(v, 64)
			switch k {
			case "calls":
				c = f
			case "usec":
				u = f
			}
		}
		if name == "cmdstat_evalsha" || name == "cmdstat_eval" {
			usec += u // includes the commands inside
			continue
		}
		calls += c
	}
	return calls, usec
}
