package semaphore_test

import (
	"context"
	_ "embed"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/claim"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
	"github.com/leasegate/leasegate/semaphore"
)

//go:embed testdata/floor_del.lua
var floorDelSrc string

var floorDel = redis.NewScript(floorDelSrc)

// BenchmarkCyclesAgainstTheGoRedisFloor runs, in every iteration, one
// cycle of each kind on a real redis-server, interleaved so that a busy
// machine slows all of them alike:
//
//	floor      SET NX PX + EVALSHA compare-and-delete, bare go-redis
//	lock       redislock Acquire + Release
//	semaphore  semaphore Acquire + Release (limit 10)
//	claim      claim Claim + Complete (a new key each time)
//
// Every cycle is two round trips. It reports each cycle's ns and its
// ratio to the floor's (docs/benchmarks.md).
func BenchmarkCyclesAgainstTheGoRedisFloor(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	ctx := context.Background()
	locks := redislock.NewService(redislock.New(rdb, redislock.Config{Prefix: "bench:"}), nil)
	sems := semaphore.New(rdb, nil, redislock.Config{Prefix: "bench:"})
	claims := claim.New(rdb, claim.Options{Config: redislock.Config{Prefix: "bench:"}})
	const ttl = 30 * time.Second
	var floor, lock, sem, clm time.Duration
	i := 0
	b.ReportAllocs()
	for b.Loop() {
		i++
		t0 := time.Now()
		if ok, err := rdb.SetNX(ctx, "bench:floor", "svc-a", ttl).Result(); err != nil || !ok {
			b.Fatalf("SET NX: %v, %v", ok, err)
		}
		if n, err := floorDel.Run(ctx, rdb, []string{"bench:floor"}, "svc-a").Int(); err != nil || n != 1 {
			b.Fatalf("del: %v, %v", n, err)
		}
		t1 := time.Now()
		if res, err := locks.Acquire(ctx, "", leasegate.AcquireRequest{Resource: "bench", Owner: "svc-a", TTL: ttl}); err != nil || !res.Acquired {
			b.Fatalf("lock Acquire: %+v, %v", res, err)
		}
		if got, err := locks.Release(ctx, "", "bench", "svc-a", 0); err != nil || got != leasegate.Released {
			b.Fatalf("lock Release: %v, %v", got, err)
		}
		t2 := time.Now()
		if res, err := sems.Acquire(ctx, "", leasegate.SemaphoreRequest{Name: "bench", Owner: "svc-a", TTL: ttl, Limit: 10}); err != nil || !res.Acquired {
			b.Fatalf("semaphore Acquire: %+v, %v", res, err)
		}
		if got, err := sems.Release(ctx, "", "bench", "svc-a", 0); err != nil || got != leasegate.Released {
			b.Fatalf("semaphore Release: %v, %v", got, err)
		}
		t3 := time.Now()
		key := strconv.Itoa(i)
		res, err := claims.Claim(ctx, "", leasegate.ClaimRequest{Scope: "bench", Key: key, Owner: "svc-a", TTL: ttl})
		if err != nil || !res.Created {
			b.Fatalf("Claim: %+v, %v", res, err)
		}
		if _, err := claims.Complete(ctx, "", leasegate.CompleteRequest{Scope: "bench", Key: key, Owner: "svc-a", Token: res.Claim.Token,
			Result: []byte(`{"ok":true}`), Keep: time.Second}); err != nil {
			b.Fatalf("Complete: %v", err)
		}
		t4 := time.Now()
		floor += t1.Sub(t0)
		lock += t2.Sub(t1)
		sem += t3.Sub(t2)
		clm += t4.Sub(t3)
	}
	n := float64(i)
	f := float64(floor) / n
	b.ReportMetric(f, "floor-ns/cycle")
	b.ReportMetric(float64(lock)/n, "lock-ns/cycle")
	b.ReportMetric(float64(sem)/n, "sem-ns/cycle")
	b.ReportMetric(float64(clm)/n, "claim-ns/cycle")
	b.ReportMetric(float64(lock)/n/f, "lock/floor")
	b.ReportMetric(float64(sem)/n/f, "sem/floor")
	b.ReportMetric(float64(clm)/n/f, "claim/floor")
}
