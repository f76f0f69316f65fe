package redislock_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// BenchmarkAcquireRelease measures one acquire plus one release (two
// script round trips) of a free resource. Results: docs/benchmarks.md.
func BenchmarkAcquireRelease(b *testing.B) {
	b.Run("miniredis", func(b *testing.B) {
		m := miniredis.RunT(b)
		rdb := redis.NewClient(&redis.Options{Addr: m.Addr()})
		b.Cleanup(func() { _ = rdb.Close() })
		benchAcquireRelease(b, rdb)
	})
	b.Run("redis-server", func(b *testing.B) {
		srv := redistest.Start(b)
		benchAcquireRelease(b, srv.Client(b))
	})
}

func benchAcquireRelease(b *testing.B, rdb *redis.Client) {
	ctx := context.Background()
	l := wrap(redislock.New(rdb, redislock.Config{Prefix: "bench:"}))
	b.Run("sequential", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, err := l.Acquire(ctx, "bench", "svc-a", ttl)
			if err != nil || !res.Acquired {
				b.Fatalf("Acquire: %+v, %v", res, err)
			}
			if got, err := l.Release(ctx, "bench", "svc-a", 0); err != nil || got != leasegate.Released {
				b.Fatalf("Release: %v, %v", got, err)
			}
		}
	})
	b.Run("parallel, one resource per goroutine", func(b *testing.B) {
		b.ReportAllocs()
		var seq atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			resource := "bench-" + strconv.FormatInt(seq.Add(1), 10)
			for pb.Next() {
				res, err := l.Acquire(ctx, resource, "svc-a", ttl)
				if err != nil || !res.Acquired {
					b.Errorf("Acquire: %+v, %v", res, err)
					return
				}
				if got, err := l.Release(ctx, resource, "svc-a", 0); err != nil || got != leasegate.Released {
					b.Errorf("Release: %v, %v", got, err)
					return
				}
			}
		})
	})
}
