package redislock_test

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasegate/leasegate"
	"github.com/leasegate/leasegate/internal/redistest"
	"github.com/leasegate/leasegate/redislock"
)

// BenchmarkContendedHandoff: 64 goroutines take turns on one resource
// through Service with wait_ms (acquire, release, again); one op is one
// hand-off. Each waiting acquire registers its interest (two more script
// calls), so that releases publish only while someone waits.
func BenchmarkContendedHandoff(b *testing.B) {
	srv := redistest.Start(b)
	rdb := srv.Client(b)
	prefix := "hb:"
	ch := prefix + "released"
	l := redislock.New(rdb, redislock.Config{Prefix: prefix, ReleaseChannel: ch, OpTimeout: time.Second})
	w := redislock.NewWaiter(rdb, redislock.WaiterOptions{Channel: ch})
	b.Cleanup(w.Close)
	svc := redislock.NewService(l, w)
	ctx := context.Background()
	b.SetParallelism(32)
	b.ResetTimer()
	var seq atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		owner := "o" + strconv.FormatInt(seq.Add(1), 10)
		for pb.Next() {
			res, err := svc.Acquire(ctx, "", leasegate.AcquireRequest{Resource: "one", Owner: owner, TTL: time.Minute, Wait: 10 * time.Second})
			if err != nil || !res.Acquired {
				b.Errorf("acquire: %+v, %v", res, err)
				return
			}
			if _, err := svc.Release(ctx, "", "one", owner, res.Lock.Token); err != nil {
				b.Errorf("release: %v", err)
				return
			}
		}
	})
}
