package redislock_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/keyspace"
	"github.com/leasegate/leasegate/redislock"
)

// BenchmarkLockCost measures what a lock costs Redis (docs/benchmarks.md,
// "One key per lock"): the commands and Redis time of an acquire+release
// cycle, on a resource used before (its tombstone is there) and on a
// fresh one, and, with LEASEGATE_BENCH_MEMORY=1, the memory of 100,000
// held locks and of the same resources once released, the lock index
// (which a gateway keeps besides) counted apart:
//
//	LEASEGATE_BENCH_MEMORY=1 go test -run '^$' -bench LockCost -benchtime 2000x ./redislock/
func BenchmarkLockCost(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	ctx := context.Background()
	// Keys as the gateway has them: prefix "lg:", tenant "".
	newS := func(rdb *redis.Client, prefix string) *redislock.Service {
		return redislock.NewService(redislock.New(rdb, redislock.Config{Prefix: prefix}), nil)
	}
	cycle := func(b *testing.B, s *redislock.Service, resource string) {
		if res, err := s.Acquire(ctx, "", leasegate.AcquireRequest{Resource: resource, Owner: "worker-123456", TTL: time.Minute}); err != nil || !res.Acquired {
			b.Fatalf("Acquire: %+v %v", res, err)
		}
		if got, err := s.Release(ctx, "", resource, "worker-123456", 0); err != nil || got != leasegate.Released {
			b.Fatalf("Release: %v %v", got, err)
		}
	}
	b.Run("same resource", func(b *testing.B) {
		s := newS(rdb, "lgs:")
		cycle(b, s, "checkin:1000001")
		reportRedisCost(b, rdb, func() { cycle(b, s, "checkin:1000001") })
	})
	b.Run("fresh resource", func(b *testing.B) {
		s := newS(rdb, "lgf:")
		n := 0
		reportRedisCost(b, rdb, func() {
			n++
			cycle(b, s, "checkin:"+strconv.Itoa(1000000+n))
		})
	})
	// Without a lock delay (the layout every lock has by default) and
	// with one (a fifth field, lock_delay, docs/fencing.md).
	for _, delay := range []time.Duration{0, 5 * time.Second} {
		name := "memory of 100k locks"
		if delay > 0 {
			name += " with a lock delay"
		}
		b.Run(name, func(b *testing.B) {
			if os.Getenv("LEASEGATE_BENCH_MEMORY") == "" {
				b.Skip("set LEASEGATE_BENCH_MEMORY=1 to hold 100,000 locks")
			}
			const n = 100_000
			for b.Loop() {
				// A fresh server each time, keys exactly as the gateway's.
				rdb := redistest.Start(b).Client(b)
				s := newS(rdb, "lg:")
				index := keyspace.Space{Prefix: "lg:"}.LockIndex("")
				each(b, 64, func(int) error { return rdb.Ping(ctx).Err() }) // the pool's connections
				before := usedMemory(b, rdb)
				each(b, n, func(j int) error {
					res, err := s.Acquire(ctx, "", leasegate.AcquireRequest{Resource: "checkin:" + strconv.Itoa(1000000+j), Owner: "worker-123456", TTL: time.Hour, LockDelay: delay})
					if err == nil && !res.Acquired {
						err = fmt.Errorf("not acquired")
					}
					return err
				})
				withIndex := usedMemory(b, rdb)
				// The index apart: the locks' own memory is what deleting
				// it leaves (as measured before the index existed).
				if err := rdb.Del(ctx, index).Err(); err != nil {
					b.Fatal(err)
				}
				held := usedMemory(b, rdb)
				indexed := withIndex - held
				each(b, n, func(j int) error {
					_, err := s.Release(ctx, "", "checkin:"+strconv.Itoa(1000000+j), "worker-123456", 0)
					return err
				})
				released := usedMemory(b, rdb)
				b.ReportMetric(float64(held-before)/n, "B/held-lock")
				b.ReportMetric(float64(indexed)/n, "B/index-entry")
				b.ReportMetric(float64(released-before)/n, "B/released-resource")
				lock := keyspace.Space{Prefix: "lg:"}.Resource("", "checkin:1000001").Lock()
				b.Logf("MEMORY USAGE of a released lock key %d", rdb.MemoryUsage(ctx, lock, 0).Val())
			}
		})
	}
}

// usedMemory is INFO memory's used_memory.
func usedMemory(b *testing.B, rdb *redis.Client) int64 {
	b.Helper()
	info, err := rdb.Info(context.Background(), "memory").Result()
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatal("no used_memory in INFO memory")
	return 0
}

// each runs fn(0..n-1) on 16 goroutines.
func each(b *testing.B, n int, fn func(int) error) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := w; j < n; j += 16 {
				if err := fn(j); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}
